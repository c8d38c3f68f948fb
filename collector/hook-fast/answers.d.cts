/** A hook's answer: the JSON document `tacho hook` prints. */
export type HookAnswer = Record<string, unknown>;
/** A decision as the policy gives it; `none` is no decision (the harness's own flow decides). */
export type Decision = "allow" | "deny" | "ask" | "none";

/** A custom agent's name. */
export declare const AGENT_NAME: RegExp;
/** Names a custom agent may not take (protocol/ids.ts RESERVED_AGENT_NAMES). */
export declare const RESERVED_AGENT_NAMES: readonly string[];
/** The harnesses `tacho hook --harness` accepts (protocol/ids.ts HARNESSES). */
export declare const HARNESSES: readonly string[];
/** The largest payload forwarded whole. */
export declare const MAX_PAYLOAD_BYTES: number;

/** The answer that carries a decision on the events that can take one; `{}` elsewhere. */
export declare function decisionAnswer(event: string, decision: Decision, reason: string): HookAnswer;
/** The event name a harness's payload carries (Stella names it `event`); null when it has none. */
export declare function eventNameOf(harness: string | null, payload: Record<string, unknown>): string | null;
/** A decision on one event in the harness's own answer shape (raw, harness-named event). */
export declare function harnessDecision(harness: string | null, event: string, decision: Decision, reason: string): HookAnswer;
/** Cursor's flat decision shape (ask becomes deny). */
export declare function cursorDecision(event: string, decision: Decision, reason: string): HookAnswer;
/** Stella's `action` decision shape (ask becomes require_approval). */
export declare function stellaDecision(decision: Decision, reason: string): HookAnswer;
/** The decision shape Codex accepts for an event (ask becomes deny; allow on PreToolUse is `{}`). */
export declare function codexDecision(event: string, decision: Decision, reason: string): HookAnswer;
/** The fail-closed answer when the hook cannot do its job. */
export declare function refusal(event: string | null, code: string, message: string, harness: string | null): HookAnswer;
