import type { Decision, HookAnswer } from "../hook-fast/answers.cjs";

/** A hook payload: the harness's own JSON, or the canonical (Claude-shaped) event the mapper reads. */
export type Payload = Record<string, unknown>;

/** What normalizing needs beyond the payload. */
export interface NormalizeContext {
  /** The harnesses this computer wraps (host.json). */
  wrapped: readonly string[];
  /** The harness process the hook ran under (wire `pid`, `pid_start`). */
  pid?: number | undefined;
  pidStart?: string | undefined;
  /** Per-session memory across events (the recorder's; absent offline). */
  memory?: Map<string, string> | undefined;
}

/** A canonical event, or the reason the event is not recorded at all. */
export type Normalized = { event: Payload } | { ignore: string };

/** How one harness's hook events become the canonical event model, and its answers go back. */
export interface EventAdapter {
  normalize(payload: Payload, ctx: NormalizeContext): Normalized;
  /** The harness's own answer for a canonical answer to a canonical event. */
  shapeAnswer(canonical: Payload, answer: HookAnswer): HookAnswer;
  /** What a policy's `ask` becomes: Codex and Cursor cannot hold a step for a person. */
  ask: "ask" | "deny";
}

export function str(v: unknown): string | undefined {
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

/** Drops undefined values so a canonical event carries only what the harness sent. */
export function compact(o: Payload): Payload {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/** The decision and reason a canonical PreToolUse answer carries (mapper's shape); `none` when it carries none. */
export function toolDecision(answer: HookAnswer): { decision: Decision; reason: string } {
  const out = (answer as { hookSpecificOutput?: { permissionDecision?: unknown; permissionDecisionReason?: unknown } }).hookSpecificOutput;
  const d = out?.permissionDecision;
  return {
    decision: d === "deny" || d === "ask" || d === "allow" ? d : "none",
    reason: typeof out?.permissionDecisionReason === "string" ? out.permissionDecisionReason : "",
  };
}
