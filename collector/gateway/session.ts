// The session tie: which session's chain a call the gateway carries is recorded on. Shared by each
// side of the gateway; a call tied to none is recorded on the computer's own chain.
import type { IncomingHttpHeaders } from "node:http";
import { AgentName, RESERVED_AGENT_NAMES } from "../../protocol/index.ts";
import { parseObject, str } from "../lib/json.ts";
import { HOOK_SECRET_HEADER } from "../lib/loopback.ts";
import type { GatewaySessionRef } from "../recorder/gateway-steps.ts";

/** A session a call names (Recorder.recordGateway records on its current run). */
export type GatewaySession = GatewaySessionRef;

/**
 * A session the call belongs to, from the headers its harness sends: Claude Code's
 * `x-claude-code-session-id`; Codex's `session-id` (or the `session_id` of `x-codex-turn-metadata`);
 * a custom agent's `x-oxagen-agent` and `x-oxagen-session-id`. Null when the call names none.
 */
export function sessionOfHeaders(h: IncomingHttpHeaders): GatewaySession | null {
  const one = (name: string) => {
    const v = h[name];
    return str(Array.isArray(v) ? v[0] : v);
  };
  const claude = one("x-claude-code-session-id");
  if (claude) return { harness: "claude-code", agent: null, sessionId: claude };
  const meta = one("x-codex-turn-metadata");
  let metaSession: string | undefined;
  if (meta) metaSession = str(parseObject(meta)?.session_id);
  const codex = one("session-id") ?? metaSession;
  if (codex && (meta !== undefined || (one("originator") ?? "").startsWith("codex")))
    return { harness: "codex", agent: null, sessionId: codex };
  const agent = one("x-oxagen-agent");
  const session = one("x-oxagen-session-id");
  if (agent && session && AgentName.safeParse(agent).success && !(RESERVED_AGENT_NAMES as readonly string[]).includes(agent))
    return { harness: agent, agent, sessionId: session };
  return null;
}

/** Headers for the gateway only (the session, the enrollment's secret): never forwarded. */
export const GATEWAY_HEADERS = ["x-oxagen-agent", "x-oxagen-session-id", HOOK_SECRET_HEADER];
