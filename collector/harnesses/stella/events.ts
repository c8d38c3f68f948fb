import { createHash } from "node:crypto";
import { compact, type EventAdapter, type NormalizeContext, type Payload, str } from "../events-types.ts";
import { stellaAnswer } from "./answer.cjs";

const RECORDED = new Set(["SessionStart", "PreToolUse", "PostToolUse", "Stop"]);

/**
 * Stella's session: its payload has no session id, so one Stella process in one workspace is one
 * session (pid and start time, so a reused pid is a new session). Without a pid, the workspace alone.
 */
export function stellaSessionId(cwd: string, pid: number | undefined, start: string | undefined): string {
  const basis = pid !== undefined ? `${pid}:${start ?? ""}:${cwd}` : `cwd:${cwd}`;
  return `stella-${createHash("sha256").update(basis).digest("hex").slice(0, 32)}`;
}

/**
 * Stella: `event`, camelCase fields, `tool {name, input}`, `toolResult`, `finalText`. It has no
 * prompt, subagent, failed-tool or session-end hook; its session ends when its process exits.
 */
export const stellaEvents: EventAdapter = {
  ask: "ask",
  normalize(p: Payload, ctx: NormalizeContext) {
    const name = String(p.event ?? p.hook_event_name);
    if (!RECORDED.has(name)) return { ignore: `stella event ${name} is not recorded` };
    const cwd = str(p.cwd) ?? "";
    const tool = p.tool !== null && typeof p.tool === "object" ? (p.tool as Payload) : {};
    return {
      event: compact({
        ...p,
        hook_event_name: name,
        session_id: stellaSessionId(cwd, ctx.pid, ctx.pidStart),
        cwd: cwd || undefined,
        tool_name: str(tool.name),
        tool_input: tool.input,
        tool_response: p.toolResult,
        last_assistant_message: typeof p.finalText === "string" ? p.finalText : undefined,
      }),
    };
  },
  answer: stellaAnswer,
};
