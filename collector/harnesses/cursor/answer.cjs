// What Cursor is told. Plain CommonJS, type-checked (checkJs): `tacho hook` loads it on its fast path.

/** @typedef {import("../answers.cjs").Decision} Decision */
/** @typedef {import("../answers.cjs").HookAnswer} HookAnswer */

/** Cursor's veto points: an empty answer there blocks under failClosed, so each always gets a decision. */
const CURSOR_PERMISSION_EVENTS = ["preToolUse", "subagentStart", "beforeShellExecution", "beforeMCPExecution", "beforeReadFile"];

/**
 * A decision in Cursor's flat snake_case shape on one of its (camelCase) events; `ask` is not
 * enforced by Cursor, so it is a denial. No decision (`none`) is `{"permission":"allow"}` at a veto
 * point: with failClosed an answer without a permission blocks there, and Cursor's documented
 * pass-through answer is that allow.
 * @param {string} event
 * @param {Decision} decision
 * @param {string} reason
 * @returns {HookAnswer}
 */
function cursorDecision(event, decision, reason) {
  const deny = decision === "deny" || decision === "ask";
  if (CURSOR_PERMISSION_EVENTS.includes(event)) {
    return deny ? { permission: "deny", user_message: reason, agent_message: reason } : { permission: "allow" };
  }
  if (event === "beforeSubmitPrompt") return deny ? { continue: false, user_message: reason } : { continue: true };
  return {};
}

/**
 * The answer to a canonical event (its Cursor name in `cursor_event`). Nothing Oxagen decides stops a
 * subagent's start; sessionStart cannot veto, so a stop there becomes context the agent reads.
 * @param {Record<string, unknown>} event
 * @param {Decision} decision
 * @param {string} reason
 * @returns {HookAnswer}
 */
function cursorAnswer(event, decision, reason) {
  const raw = String(event.cursor_event ?? event.hook_event_name);
  switch (raw) {
    case "preToolUse":
      return cursorDecision(raw, decision, reason);
    case "beforeSubmitPrompt":
      return cursorDecision(raw, decision === "deny" ? "deny" : "none", reason);
    case "sessionStart":
      return decision === "deny" ? { additional_context: `Oxagen: ${reason}` } : {};
    default:
      return cursorDecision(raw, "none", "");
  }
}

/**
 * The fail-closed answer: a denial at the event's veto point; for an unknown event, one document
 * that denies at every Cursor veto point.
 * @param {string | null} event
 * @param {string} _code
 * @param {string} message
 * @returns {HookAnswer}
 */
function cursorRefusal(event, _code, message) {
  return event
    ? cursorDecision(event, "deny", message)
    : { permission: "deny", continue: false, user_message: message, agent_message: message };
}

module.exports = { CURSOR_PERMISSION_EVENTS, cursorDecision, cursorAnswer, cursorRefusal };
