import { ROUTES } from "../../../protocol/index.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { hostFetch } from "../../lib/server.ts";
import type { HostConfig } from "../../lib/state.ts";

/** The server's view of this host's agents (GET /v1/host), or why it is not available. */
export type ServerView = { status: string; agents: { name: string; health: string; reason: string | null }[] } | { error: string };

export async function serverView(host: HostConfig): Promise<ServerView> {
  useNodeCrypto();
  try {
    const res = await hostFetch(host, ROUTES.hostStatus, { timeoutMs: 3000 });
    const body = (await res.json().catch(() => null)) as { status?: unknown; agents?: unknown; message?: unknown } | null;
    if (!res.ok) return { error: `HTTP ${res.status}${typeof body?.message === "string" ? `: ${body.message}` : ""}` };
    const agents = Array.isArray(body?.agents) ? (body.agents as Record<string, unknown>[]) : [];
    return {
      status: typeof body?.status === "string" ? body.status : "unknown",
      agents: agents.map((a) => ({
        name: String(a.name),
        health: String(a.health),
        reason: typeof a.reason === "string" ? a.reason : null,
      })),
    };
  } catch (err) {
    return { error: `unreachable (${(err as Error).name === "TimeoutError" ? "timed out" : (err as Error).message})` };
  }
}
