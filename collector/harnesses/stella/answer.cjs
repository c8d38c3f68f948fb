// What Stella is told. Plain CommonJS, type-checked (checkJs): `tacho hook` loads it on its fast path.

/** @typedef {import("../answers.cjs").Decision} Decision */
/** @typedef {import("../answers.cjs").HookAnswer} HookAnswer */

/** The events Stella holds for a decision and fails closed on (Stella's hooks docs, "Events"): the rest go on whatever a hook says. */
const STELLA_VETO_EVENTS = ["PreToolUse", "PreIssueWork"];

/**
 * A decision in Stella's `action` shape at a veto event; `ask` holds the step for a person's approval.
 * No decision (`none`) is `{}`: JSON without `action` is informational to Stella, which then goes on
 * as if no hook had spoken. Every other event is allowed.
 * @param {string} event
 * @param {Decision} decision
 * @param {string} reason
 * @returns {HookAnswer}
 */
function stellaDecision(event, decision, reason) {
  if (!STELLA_VETO_EVENTS.includes(event) || decision === "allow") return { action: "allow" };
  if (decision === "none") return {};
  return { action: decision === "ask" ? "require_approval" : "deny", reason };
}

/**
 * @param {Record<string, unknown>} event
 * @param {Decision} decision
 * @param {string} reason
 * @returns {HookAnswer}
 */
function stellaAnswer(event, decision, reason) {
  return stellaDecision(String(event.hook_event_name), decision, reason);
}

/**
 * The fail-closed answer: a denial at a veto event (or an unknown one), an allow elsewhere.
 * @param {string | null} event
 * @param {string} _code
 * @param {string} message
 * @returns {HookAnswer}
 */
function stellaRefusal(event, _code, message) {
  return stellaDecision(event ?? "PreToolUse", "deny", message);
}

/**
 * The event a Stella payload names (Stella calls it `event`).
 * @param {Record<string, unknown>} payload
 * @returns {unknown}
 */
function stellaEventName(payload) {
  return payload.hook_event_name ?? payload.event;
}

module.exports = { STELLA_VETO_EVENTS, stellaAnswer, stellaRefusal, stellaEventName };
