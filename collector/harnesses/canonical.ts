import { z } from "zod";

/** A field the recorder reads with one type: any other value of it is as if it were not there. */
const text = z.string().optional().catch(undefined);

/**
 * The canonical hook event (docs/collector.md, "The hook wire"; the payload table of "Wrap an
 * agent"): Claude Code's shape, which a custom agent sends as it is and each harness adapter turns
 * its own payload into. The fields the recorder reads are typed here; a field of another type is
 * treated as absent (a session id that is not a string is no usable session), `transcript_path:
 * null` is the same as omitted, and every field not named here is kept as it came. The content
 * fields (a prompt, a tool's input and result) are recorded as they came, whatever their JSON type.
 */
export const HookEvent = z.looseObject({
  session_id: text,
  hook_event_name: text,
  cwd: text,
  prompt: z.unknown().optional(),
  tool_name: text,
  tool_input: z.unknown().optional(),
  tool_use_id: text,
  tool_response: z.unknown().optional(),
  transcript_path: z
    .string()
    .nullish()
    .catch(undefined)
    .transform((v) => v ?? undefined),
});
export type HookEvent = z.infer<typeof HookEvent>;
