// Plain JS on purpose: `tacho hook` loads this before anything else, and a .ts import would load
// Node's type stripper (see docs/collector.md, "The hook wire"). Types live in answers.d.cts.

const AGENT_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
// Mirrors RESERVED_AGENT_NAMES and HARNESSES in protocol/ids.ts (a test keeps them equal).
const RESERVED_AGENT_NAMES = ["claude-code", "codex", "cursor", "stella", "claude-desktop", "claude-agent-sdk", "custom", "proxy"];
const HARNESSES = ["claude-code", "codex", "cursor", "stella"];
const MAX_PAYLOAD_BYTES = 1024 * 1024;

/** The event name a harness's payload carries (Stella names it `event`). */
function eventNameOf(harness, payload) {
  const name = payload.hook_event_name ?? (harness === "stella" ? payload.event : undefined);
  return typeof name === "string" && name.length > 0 ? name : null;
}

// `none` is no decision: the answer leaves the harness's own permission flow to decide.
function decisionAnswer(event, decision, reason) {
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

// Cursor's veto points: an empty answer there blocks under failClosed, so each always gets a decision.
const CURSOR_PERMISSION_EVENTS = ["preToolUse", "subagentStart", "beforeShellExecution", "beforeMCPExecution", "beforeReadFile"];

/**
 * A decision in Cursor's flat snake_case shape; `ask` is not enforced by Cursor, so it is a denial.
 * No decision (`none`) is `{"permission":"allow"}` at a veto point: with failClosed an answer
 * without a permission blocks there, and Cursor's documented pass-through answer is that allow.
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
 * A decision in Stella's `action` shape; `ask` holds the step for a person's approval. No decision
 * (`none`) is `{}`: JSON without `action` is informational to Stella, which then goes on as if no
 * hook had spoken.
 */
function stellaDecision(decision, reason) {
  if (decision === "none") return {};
  if (decision === "allow") return { action: "allow" };
  return { action: decision === "ask" ? "require_approval" : "deny", reason };
}

/**
 * A decision in the shape Codex accepts for the event; any extra field would void the whole answer.
 * Codex ignores (and marks failed) a PreToolUse `allow`: only a denial is answered there.
 */
function codexDecision(event, decision, reason) {
  // Codex cannot ask a person from a hook: a policy that asks is refused with its reason.
  const d = decision === "ask" ? "deny" : decision;
  if (event === "PreToolUse") return d === "deny" ? decisionAnswer(event, "deny", reason) : {};
  return decisionAnswer(event, d, reason);
}

/** A decision (allow/deny/ask) on one event, in the harness's own answer shape. */
function harnessDecision(harness, event, decision, reason) {
  if (harness === "cursor") return cursorDecision(event, decision, reason);
  if (harness === "stella") return stellaDecision(event === "PreToolUse" || event === "PreIssueWork" ? decision : "allow", reason);
  if (harness === "codex") return codexDecision(event, decision, reason);
  return decisionAnswer(event, decision, reason);
}

const CODEX_MESSAGE_EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "PostCompact", "SubagentStop"];

function harnessRefusal(harness, event, message) {
  if (harness === "cursor") {
    // Unknown event: one document that denies at every Cursor veto point.
    return event
      ? cursorDecision(event, "deny", message)
      : { permission: "deny", continue: false, user_message: message, agent_message: message };
  }
  if (harness === "stella") return stellaDecision(event === "PreToolUse" || event === "PreIssueWork" || !event ? "deny" : "allow", message);
  // Codex validates each answer strictly, so an unknown event gets the PreToolUse denial alone.
  const base = codexDecision(event ?? "PreToolUse", "deny", message);
  return CODEX_MESSAGE_EVENTS.includes(event) ? { ...base, systemMessage: `tacho hook: ${message}` } : base;
}

/**
 * The answer when the hook cannot do its job (not enrolled, a refused agent name, a payload it
 * cannot read). It fails closed at each veto point the caller reads: a tool is denied, a prompt
 * blocked, a session stopped. When the event is unknown, one document carries all three, so a
 * caller that reads only its own event's field still stops. `error` is for custom agents' logs.
 */
function refusal(event, code, message, harness) {
  if (harness === "codex" || harness === "cursor" || harness === "stella") return harnessRefusal(harness, event, message);
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

module.exports = {
  AGENT_NAME,
  RESERVED_AGENT_NAMES,
  HARNESSES,
  MAX_PAYLOAD_BYTES,
  eventNameOf,
  decisionAnswer,
  cursorDecision,
  stellaDecision,
  codexDecision,
  harnessDecision,
  refusal,
};
