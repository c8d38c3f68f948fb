// Who `tacho hook` answers and how it fails closed, for its fast path. Each harness's answer rules
// (its answer to a decision, its refusal) live in its folder (claude-code/, codex/, cursor/, stella/
// answer.cjs), which the recorder's adapters (events.ts) answer from too; a custom agent speaks
// Claude Code's shape. Plain CommonJS, type-checked (collector/tsconfig.json checkJs): the hook's
// fast path loads it without the TypeScript stripper, and an old Node reaches it (bin/preflight.cjs).
// Each harness's module loads only when that harness is answered.

/** @typedef {"allow" | "deny" | "ask" | "none"} Decision A decision as the policy gives it; `none` is no decision (the harness's own flow decides). */
/** @typedef {Record<string, unknown>} HookAnswer The JSON document `tacho hook` prints. */
/** @typedef {{ tier?: "client_attested"; notice?: string }} Offline What `tacho hook` adds to an answer it made without the recorder. */
/**
 * @typedef {(event: string | null, code: string, message: string, harness: string | null) => HookAnswer} Refusal
 *   A harness's fail-closed answer, for its own event name (null: unknown).
 */

/** A custom agent's name. */
const AGENT_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** Names a custom agent may not take: protocol/ids.ts RESERVED_AGENT_NAMES (a test keeps them equal). */
const RESERVED_AGENT_NAMES = ["claude-code", "codex", "cursor", "stella", "claude-desktop", "claude-agent-sdk", "custom", "proxy"];
/** The harnesses `tacho hook --harness` answers: protocol/ids.ts HARNESSES (a test keeps them equal). */
const HARNESSES = ["claude-code", "codex", "cursor", "stella"];

/**
 * @param {string | null} harness
 * @returns {Refusal}
 */
function refusalOf(harness) {
  if (harness === "codex") return require("./codex/answer.cjs").codexRefusal;
  if (harness === "cursor") return require("./cursor/answer.cjs").cursorRefusal;
  if (harness === "stella") return require("./stella/answer.cjs").stellaRefusal;
  return require("./claude-code/answer.cjs").claudeRefusal;
}

/**
 * The answer when the hook cannot do its job (not enrolled, a refused agent name, a payload it
 * cannot read): it fails closed at each veto point the caller reads.
 * @param {string | null} event the harness's own event name; null when unknown
 * @param {string} code
 * @param {string} message
 * @param {string | null} harness
 * @returns {HookAnswer}
 */
function refusal(event, code, message, harness) {
  return refusalOf(harness)(event, code, message, harness);
}

/**
 * The event name a harness's payload carries (Stella names it `event`); null when it has none.
 * @param {string | null} harness
 * @param {Record<string, unknown>} payload
 * @returns {string | null}
 */
function eventNameOf(harness, payload) {
  const name = harness === "stella" ? require("./stella/answer.cjs").stellaEventName(payload) : payload.hook_event_name;
  return typeof name === "string" && name.length > 0 ? name : null;
}

module.exports = { AGENT_NAME, RESERVED_AGENT_NAMES, HARNESSES, refusal, eventNameOf };
