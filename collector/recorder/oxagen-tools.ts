// The workspace's Oxagen tools as the recorder sees them from two sides: the harness's own hooks
// (PreToolUse, PostToolUse for `mcp__oxagen__<tool>`) and the gateway that carries the call to the
// server. The hooks' PreToolUse ties a call that names no session to its session; the gateway's
// frame makes the PostToolUse the same call, not a second one (docs/collector.md, "The MCP side").
import { sha256Hex, toolInputDigest } from "../../protocol/index.ts";
import { OXAGEN_MCP_SERVER } from "../harnesses/mcp-server.ts";
import type { GatewaySessionRef } from "./gateway-steps.ts";
import type { HookRequest } from "./request.ts";

export { OXAGEN_MCP_SERVER };
/** How a harness names an Oxagen tool in its hooks: `mcp__oxagen__<tool>`. */
export const OXAGEN_TOOL_PREFIX = `mcp__${OXAGEN_MCP_SERVER}__`;

/** The Oxagen tool a hook event names (`refund` for `mcp__oxagen__refund`), or null. */
export function oxagenToolOf(toolName: unknown): string | null {
  return typeof toolName === "string" && toolName.startsWith(OXAGEN_TOOL_PREFIX) && toolName.length > OXAGEN_TOOL_PREFIX.length
    ? toolName.slice(OXAGEN_TOOL_PREFIX.length)
    : null;
}

/** The journal id of the gateway's frame for a harness's tool call (by its tool_use_id), so its PostToolUse is known as that call. */
export function gatewayToolCallId(chain: string, toolUseId: string): string {
  return `mcp-${sha256Hex(`${chain}\u0000${toolUseId}`).slice(0, 40)}`;
}

/** A PreToolUse of an Oxagen tool: the session it came from and the harness's id of the call. */
export interface ToolRequestTie {
  session: GatewaySessionRef;
  toolUseId: string | null;
  t: number;
}

/** How long a PreToolUse waits for its call to reach the gateway. */
const TIE_MS = 120_000;
const MAX_WAITING = 256;

/** The arguments a hook's tool_input stands for (a JSON text is read as the object it holds). */
function argumentsOf(input: unknown): unknown {
  if (typeof input !== "string") return input ?? {};
  try {
    return JSON.parse(input) as unknown;
  } catch {
    return input;
  }
}

/**
 * PreToolUse events of Oxagen tools not yet claimed by a gateway call, by tool and the digest of
 * their arguments (protocol/tools.ts, the same digest the server meters). A call claims the newest
 * one of its tool and arguments (of its own session when it names one). Bounded and short-lived.
 */
export class OxagenToolRequests {
  readonly #waiting = new Map<string, ToolRequestTie[]>();
  #count = 0;

  /** Notes a (canonical) PreToolUse of an Oxagen tool; `sessionId` is the one its harness named. */
  note(req: HookRequest, sessionId: string): void {
    const e = req.event;
    const tool = oxagenToolOf(e.tool_name);
    const label = req.harness ?? req.agent;
    if (e.hook_event_name !== "PreToolUse" || !tool || !label) return;
    let key: string;
    try {
      key = `${tool}\u0000${toolInputDigest(argumentsOf(e.tool_input)).sha256}`;
    } catch {
      return;
    }
    const toolUseId = typeof e.tool_use_id === "string" && e.tool_use_id.length > 0 ? e.tool_use_id : null;
    const list = this.#waiting.get(key) ?? [];
    list.push({ session: { harness: label, agent: req.agent, sessionId }, toolUseId, t: Date.now() });
    this.#waiting.set(key, list);
    if (++this.#count > MAX_WAITING) this.#sweep(Number.POSITIVE_INFINITY);
  }

  /** The PreToolUse a call of `tool` with these arguments follows (taken: one call per request); null when none waits. */
  claim(tool: string, argsSha256: string, session: GatewaySessionRef | null, now = Date.now()): ToolRequestTie | null {
    this.#sweep(now);
    const key = `${tool}\u0000${argsSha256}`;
    const list = this.#waiting.get(key);
    if (!list) return null;
    for (let i = list.length - 1; i >= 0; i--) {
      const tie = list[i]!;
      if (session && (tie.session.harness !== session.harness || tie.session.sessionId !== session.sessionId)) continue;
      list.splice(i, 1);
      this.#count--;
      if (list.length === 0) this.#waiting.delete(key);
      return tie;
    }
    return null;
  }

  /** Forgets ties older than {@link TIE_MS} (all but the newest {@link MAX_WAITING} when `now` is infinite). */
  #sweep(now: number): void {
    const overflow = now === Number.POSITIVE_INFINITY;
    for (const [key, list] of this.#waiting) {
      const kept = overflow ? list.slice(1) : list.filter((tie) => now - tie.t <= TIE_MS);
      this.#count -= list.length - kept.length;
      if (kept.length) this.#waiting.set(key, kept);
      else this.#waiting.delete(key);
      if (overflow && this.#count <= MAX_WAITING) return;
    }
  }
}
