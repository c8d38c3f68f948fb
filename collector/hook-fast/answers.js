// Plain JS on purpose: `tacho hook` loads this before anything else, and a .ts import would load
// Node's type stripper (see docs/collector.md, "The hook wire"). Types live in answers.d.ts.

export const AGENT_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
// Mirrors RESERVED_AGENT_NAMES and HARNESSES in protocol/ids.ts (a test keeps them equal).
export const RESERVED_AGENT_NAMES = ["claude-code", "codex", "cursor", "stella", "claude-desktop", "claude-agent-sdk", "custom", "proxy"];
export const HARNESSES = ["claude-code", "codex", "cursor", "stella"];
export const MAX_PAYLOAD_BYTES = 1024 * 1024;

export function decisionAnswer(event, decision, reason) {
  switch (event) {
    case "PreToolUse":
      return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: decision, permissionDecisionReason: reason } };
    case "UserPromptSubmit":
      return decision === "deny" ? { decision: "block", reason } : {};
    case "SessionStart":
      return decision === "deny" ? { continue: false, stopReason: reason } : {};
    case "PermissionRequest":
      return decision === "deny" ? { hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: reason } } } : {};
    default:
      return {};
  }
}

/**
 * The answer when the hook cannot do its job (not enrolled, a refused agent name, a payload it
 * cannot read). It fails closed at each veto point the caller reads: a tool is denied, a prompt
 * blocked, a session stopped. When the event is unknown, one document carries all three, so a
 * caller that reads only its own event's field still stops. `error` is for custom agents' logs.
 */
export function refusal(event, code, message, harness) {
  const known = event === "PreToolUse" || event === "UserPromptSubmit" || event === "SessionStart" || event === "PermissionRequest";
  const base = known
    ? decisionAnswer(event, "deny", message)
    : event
      ? {}
      : {
          continue: false,
          stopReason: message,
          decision: "block",
          reason: message,
          hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: message },
        };
  const answer = { ...base, systemMessage: `tacho hook: ${message}` };
  // Claude Code reads only its documented fields; a custom agent gets a machine-readable code too.
  if (harness !== "claude-code") answer.error = { code, message };
  return answer;
}
