// What Codex is told. Plain CommonJS, type-checked (checkJs): `tacho hook` loads it on its fast path.
const { claudeAnswer } = require("../claude-code/answer.cjs");

/** @typedef {import("../answers.cjs").Decision} Decision */
/** @typedef {import("../answers.cjs").HookAnswer} HookAnswer */
/** @typedef {import("../answers.cjs").Offline} Offline */

/** The events whose answer may carry Codex's common fields (`continue`, `stopReason`, `systemMessage`), as Codex's own hook docs list them. */
const CODEX_COMMON_EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "PostCompact", "SubagentStop"];

/**
 * The fields Codex accepts in the answer to an event: any other field makes Codex discard the whole
 * answer and run the step unhooked. Interrupt's answer may hold systemMessage and nothing else.
 * @param {Record<string, unknown>} event
 * @returns {string[]}
 */
function acceptedFields(event) {
  if (event.codex_event === "Interrupt") return ["systemMessage"];
  const name = String(event.hook_event_name);
  const common = CODEX_COMMON_EVENTS.includes(name) ? ["continue", "stopReason", "systemMessage"] : [];
  if (name === "UserPromptSubmit") return [...common, "decision", "reason"];
  if (name === "PermissionRequest") return ["hookSpecificOutput"];
  // SessionStart's additionalContext is never given; Stop needs JSON on stdout, `{}` is the silent answer.
  return common;
}

/**
 * The answer to a canonical event in the shape Codex accepts for it. Codex cannot ask a person from a
 * hook (a policy that asks is refused with its reason), and ignores (and marks failed) a PreToolUse
 * `allow`: only a denial is answered there.
 * @param {Record<string, unknown>} event
 * @param {Decision} decision
 * @param {string} reason
 * @param {Offline} [offline]
 * @returns {HookAnswer}
 */
function codexAnswer(event, decision, reason, offline) {
  if (event.hook_event_name === "PreToolUse") {
    return decision === "deny" || decision === "ask" ? claudeAnswer(event, "deny", reason) : {};
  }
  const full = claudeAnswer(event, decision, reason, offline);
  /** @type {HookAnswer} */
  const out = {};
  for (const k of acceptedFields(event)) if (full[k] !== undefined) out[k] = full[k];
  return out;
}

/**
 * The fail-closed answer: the denial at this event, with the message as a notice where Codex shows
 * one. Codex validates each answer strictly, so an unknown event gets the PreToolUse denial alone.
 * @param {string | null} event
 * @param {string} _code
 * @param {string} message
 * @returns {HookAnswer}
 */
function codexRefusal(event, _code, message) {
  return codexAnswer({ hook_event_name: event ?? "PreToolUse" }, "deny", message, { notice: message });
}

module.exports = { CODEX_COMMON_EVENTS, codexAnswer, codexRefusal };
