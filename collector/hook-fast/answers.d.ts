/** A hook's answer: the JSON document `tacho hook` prints. */
export type HookAnswer = Record<string, unknown>;
/** A decision as the policy gives it. */
export type Decision = "allow" | "deny" | "ask";

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
/** The fail-closed answer when the hook cannot do its job. */
export declare function refusal(event: string | null, code: string, message: string, harness: string | null): HookAnswer;
