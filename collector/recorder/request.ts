import { z } from "zod";
import { PAYLOADS } from "../../protocol/index.ts";
import type { DecisionRecord, Told } from "./decide.ts";

/** One hook event as the wire carries it (docs/collector.md, "The hook wire"); `answer` only on spooled lines. */
export interface HookRequest {
  id: string | null;
  t: number;
  source: string;
  harness: string | null;
  agent: string | null;
  /** The harness's own payload (the adapters make it canonical: harnesses/canonical.ts). */
  event: Record<string, unknown>;
  spooled_ms?: number;
  /** Only on spool lines of an older `tacho hook`, which cut a payload over 1 MiB without hashing what it cut. */
  oversize?: { bytes: number; dropped_fields: string[] };
  answer?: unknown;
  /** Spooled lines only: the decision `tacho hook` made offline, recorded as it was made. */
  verdict?: DecisionRecord;
  /** The harness process the hook ran under, and its start time (wire `pid`, `pid_start`). */
  pid?: number;
  pid_start?: string;
}

const label = z.string().min(1).max(128);

/**
 * A line-protocol request (`tacho hook`'s, or a spool line): `v: 1` and an event object, or it is
 * not one. Every other field is read leniently, as each says: one that is not what it should be is
 * taken as absent (an id that is not one is no id: the step is recorded, not deduplicated).
 */
const HookLine = z.object({
  v: z.literal(1),
  event: z.record(z.string(), z.unknown()),
  id: z
    .string()
    .regex(/^[0-9a-zA-Z_-]{1,64}$/)
    .nullable()
    .catch(null),
  t: z
    .int()
    .positive()
    .catch(() => Date.now()),
  source: label.catch("command"),
  harness: label.nullable().catch(null),
  agent: label.nullable().catch(null),
  spooled_ms: z.number().optional().catch(undefined),
  // What a spooled line says `tacho hook` decided offline: a policy_decision's own fields.
  verdict: PAYLOADS.policy_decision
    .pick({ subject: true, decision: true, mode: true, reason: true, rule: true, policy_etag: true })
    .optional()
    .catch(undefined),
  oversize: z
    .object({
      bytes: z.number(),
      dropped_fields: z.array(z.unknown()).transform((fs) => fs.filter((f): f is string => typeof f === "string").slice(0, 64)),
    })
    .optional()
    .catch(undefined),
  pid: z.int().gt(1).optional().catch(undefined),
  pid_start: z.string().max(64).optional().catch(undefined),
  answer: z.unknown().optional(),
});

/** Parses a line-protocol request; null when it is not one. */
export function parseRequest(value: unknown): HookRequest | null {
  const r = HookLine.safeParse(value);
  if (!r.success) return null;
  const req: HookRequest = {
    id: r.data.id,
    t: r.data.t,
    source: r.data.source,
    harness: r.data.harness,
    agent: r.data.agent,
    event: r.data.event,
  };
  const { spooled_ms, verdict, oversize, pid, pid_start, answer } = r.data;
  if (spooled_ms !== undefined) req.spooled_ms = spooled_ms;
  if (verdict) req.verdict = verdict as DecisionRecord;
  if (oversize) req.oversize = oversize;
  if (pid !== undefined) req.pid = pid;
  if (pid_start !== undefined) req.pid_start = pid_start;
  if (answer !== undefined) req.answer = answer;
  return req;
}

/**
 * What a spooled line's answer told the harness, for a line written before spool lines carried their
 * decision (`verdict`): `tacho hook` spools its answer in the canonical shape (a custom agent's),
 * which carries the decision at the veto events. Only for such lines: every other decision is the
 * decision value itself, never read back from an answer.
 */
export function toldBySpooledAnswer(event: string, answer: unknown): { decision: Told["decision"]; reason: string | null } {
  const a = (answer ?? {}) as Record<string, unknown>;
  const out = a.hookSpecificOutput as
    | { permissionDecision?: unknown; permissionDecisionReason?: unknown; decision?: { behavior?: unknown } }
    | undefined;
  const reason = typeof out?.permissionDecisionReason === "string" ? out.permissionDecisionReason : null;
  const d = out?.permissionDecision ?? out?.decision?.behavior;
  if (d === "allow" || d === "deny" || d === "ask") return { decision: d, reason };
  if ((event === "UserPromptSubmit" && a.decision === "block") || (event === "SessionStart" && a.continue === false))
    return { decision: "deny", reason };
  return { decision: "none", reason };
}
