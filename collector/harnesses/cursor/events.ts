import { compact, type EventAdapter, type NormalizeContext, type Payload, str } from "../events-types.ts";
import { cursorAnswer } from "./answer.cjs";

/** Cursor's camelCase events and the canonical events they become (generic tool hooks only: shell/MCP/read hooks double-fire). */
const EVENTS: Record<string, string> = {
  sessionStart: "SessionStart",
  beforeSubmitPrompt: "UserPromptSubmit",
  preToolUse: "PreToolUse",
  postToolUse: "PostToolUse",
  postToolUseFailure: "PostToolUseFailure",
  subagentStart: "SubagentStart",
  subagentStop: "SubagentStop",
  stop: "Stop",
  sessionEnd: "SessionEnd",
  preCompact: "PreCompact",
};

const OUTCOMES: Record<string, string> = {
  completed: "completed",
  aborted: "aborted",
  error: "error",
  window_close: "completed",
  user_close: "completed",
};

function parsedOutput(v: unknown): unknown {
  if (typeof v !== "string") return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

function wholeNumber(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.round(v) : undefined;
}

/** The token fields Cursor (observed, undocumented) puts on `stop` once a generation happened. */
function hookUsage(p: Payload): Payload | undefined {
  const input = wholeNumber(p.input_tokens);
  const output = wholeNumber(p.output_tokens);
  if (input === undefined || output === undefined) return undefined;
  return compact({
    input_tokens: input,
    output_tokens: output,
    cache_read_tokens: wholeNumber(p.cache_read_tokens),
    cache_write_tokens: wholeNumber(p.cache_write_tokens),
  });
}

/**
 * Cursor: session = conversation_id; tool output arrives as a JSON string; the turn's reply comes
 * from afterAgentResponse (remembered per session and put on the turn's end at `stop`). The token
 * counts Cursor puts on `stop` go on that turn_end as `usage`; its model calls are never recorded
 * as llm_call, so its spend is not metered (the coverage statement says so).
 */
export const cursorEvents: EventAdapter = {
  ask: "deny",
  normalize(p: Payload, ctx: NormalizeContext) {
    const session = str(p.conversation_id) ?? str(p.session_id);
    const raw = String(p.hook_event_name);
    if (raw === "afterAgentResponse") {
      if (session && typeof p.text === "string") ctx.memory?.set(session, p.text);
      return { ignore: "a reply is recorded with the turn's end" };
    }
    const name = EVENTS[raw];
    if (!name) return { ignore: `cursor event ${raw} is not recorded` };
    const roots = Array.isArray(p.workspace_roots) ? p.workspace_roots : [];
    const base: Payload = { ...p, hook_event_name: name, session_id: session, cursor_event: raw };
    switch (name) {
      case "SessionStart":
        return { event: compact({ ...base, cwd: str(p.cwd) ?? str(roots[0]), source: str(p.composer_mode), model: str(p.model) }) };
      case "UserPromptSubmit":
        return { event: compact({ ...base, prompt_id: str(p.generation_id) }) };
      case "PostToolUse":
        return { event: compact({ ...base, tool_response: parsedOutput(p.tool_output), duration_ms: wholeNumber(p.duration) }) };
      case "PostToolUseFailure":
        return { event: compact({ ...base, error: p.error_message ?? p.failure_type ?? "", duration_ms: wholeNumber(p.duration) }) };
      case "SubagentStart":
        return { event: compact({ ...base, agent_id: str(p.subagent_id), agent_type: str(p.subagent_type) }) };
      case "SubagentStop":
        return { event: compact({ ...base, agent_id: str(p.subagent_id), agent_type: str(p.subagent_type) }) };
      case "Stop": {
        const reply = session ? ctx.memory?.get(session) : undefined;
        if (session) ctx.memory?.delete(session);
        return { event: compact({ ...base, last_assistant_message: reply, prompt_id: str(p.generation_id), usage: hookUsage(p) }) };
      }
      case "SessionEnd": {
        const status = str(p.final_status) ?? str(p.reason) ?? "";
        return { event: compact({ ...base, reason: str(p.reason) ?? "session_end", outcome: OUTCOMES[status] ?? "completed" }) };
      }
      default:
        return { event: compact(base) };
    }
  },
  answer: cursorAnswer,
};
