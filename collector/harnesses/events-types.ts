import type { Decision, HookAnswer, Offline } from "./answers.cjs";

export type { Decision, HookAnswer, Offline } from "./answers.cjs";

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

/**
 * One harness's adapter (its folder): how its hook events become the canonical event model, and how
 * a decision on one becomes its answer (its answer.cjs, which `tacho hook`'s fast path loads too).
 */
export interface EventAdapter {
  normalize(payload: Payload, ctx: NormalizeContext): Normalized;
  /** The harness's own answer to a decision on a canonical event (`offline`: what `tacho hook` adds when it answered alone). */
  answer(canonical: Payload, decision: Decision, reason: string, offline?: Offline): HookAnswer;
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
