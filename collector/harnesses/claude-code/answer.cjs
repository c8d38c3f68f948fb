// What Claude Code is told (and a custom agent, which speaks Claude's shape): the canonical answer.
// Plain CommonJS, type-checked (collector/tsconfig.json checkJs): `tacho hook` loads it on its fast path.

/** @typedef {import("../answers.cjs").Decision} Decision */
/** @typedef {import("../answers.cjs").HookAnswer} HookAnswer */
/** @typedef {import("../answers.cjs").Offline} Offline */

/**
 * A decision on a canonical event, in Claude Code's shape: only the events that can take one carry
 * it, and `none` is no decision (the harness's own permission flow decides).
 * @param {string} event
 * @param {Decision} decision
 * @param {string} reason
 * @returns {HookAnswer}
 */
function claudeDecision(event, decision, reason) {
  switch (event) {
    case "PreToolUse":
      if (decision === "none") return {};
      return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: decision, permissionDecisionReason: reason } };
    case "UserPromptSubmit":
      return decision === "deny" ? { decision: "block", reason } : {};
    case "SessionStart":
      return decision === "deny" ? { continue: false, stopReason: reason } : {};
    case "PermissionRequest":
      return decision === "deny"
        ? { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: reason } } }
        : {};
    default:
      return {};
  }
}

/**
 * The answer to a canonical event: the decision, then what `tacho hook` adds when it answered
 * offline (the tier it answered at, a notice the person should read).
 * @param {Record<string, unknown>} event
 * @param {Decision} decision
 * @param {string} reason
 * @param {Offline} [offline]
 * @returns {HookAnswer}
 */
function claudeAnswer(event, decision, reason, offline = {}) {
  return {
    ...claudeDecision(String(event.hook_event_name), decision, reason),
    ...(offline.tier ? { enforcement_tier: offline.tier } : {}),
    ...(offline.notice ? { systemMessage: `tacho hook: ${offline.notice}` } : {}),
  };
}

/**
 * The fail-closed answer: a tool denied, a prompt blocked, a session stopped. When the event is
 * unknown, one document carries all three, so a caller that reads only its own event's field still
 * stops. A custom agent also gets a machine-readable `error` (Claude Code reads only its own fields).
 * @param {string | null} event
 * @param {string} code
 * @param {string} message
 * @param {string | null} harness
 * @returns {HookAnswer}
 */
function claudeRefusal(event, code, message, harness) {
  /** @type {HookAnswer} */
  const answer = event
    ? claudeAnswer({ hook_event_name: event }, "deny", message, { notice: message })
    : {
        continue: false,
        stopReason: message,
        decision: "block",
        reason: message,
        hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: message },
        systemMessage: `tacho hook: ${message}`,
      };
  if (harness !== "claude-code") answer.error = { code, message };
  return answer;
}

module.exports = { claudeDecision, claudeAnswer, claudeRefusal };
