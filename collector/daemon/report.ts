import { AgentName, type HostReport, ROUTES } from "../../protocol/index.ts";
import { adapterFor } from "../harnesses/index.ts";
import { hookState, readConfig } from "../harnesses/settings.ts";
import { hostFetch } from "../lib/server.ts";
import type { HostConfig } from "../lib/state.ts";
import type { RecorderStatus } from "./status.ts";

function hooksOk(host: HostConfig, harness: string): boolean {
  try {
    const adapter = adapterFor(harness);
    return hookState(readConfig(adapter).json, adapter, adapter.entries(host)).state === "present";
  } catch {
    return false;
  }
}

/**
 * What only this computer can tell the server about each wrapped harness and custom agent: frames
 * recorded but not yet acknowledged, plus hook events still waiting in the spool (each becomes at
 * least one frame), since when, and whether the hooks are in place. The server folds it into the
 * Wrapped agents health (pending, degraded).
 */
export function hostReport(host: HostConfig, status: Pick<RecorderStatus, "chains" | "spool">): HostReport {
  const agents = new Map<string, HostReport["agents"][number]>();
  for (const harness of host.harnesses)
    agents.set(harness, { name: harness, pending_frames: 0, oldest_pending_ms: null, hooks_ok: hooksOk(host, harness) });
  for (const chain of Object.values(status.chains)) {
    if (!chain.harness) continue;
    const a = agents.get(chain.harness) ?? { name: chain.harness, pending_frames: 0, oldest_pending_ms: null, hooks_ok: true };
    a.pending_frames += chain.frames;
    if (chain.oldest_pending_ms !== null)
      a.oldest_pending_ms = Math.min(a.oldest_pending_ms ?? chain.oldest_pending_ms, chain.oldest_pending_ms);
    agents.set(chain.harness, a);
  }
  for (const [label, spooled] of Object.entries(status.spool.by_label)) {
    if (!AgentName.safeParse(label).success) continue;
    const a = agents.get(label) ?? { name: label, pending_frames: 0, oldest_pending_ms: null, hooks_ok: true };
    a.pending_frames += spooled.events;
    if (spooled.oldest_ms !== null) a.oldest_pending_ms = Math.min(a.oldest_pending_ms ?? spooled.oldest_ms, spooled.oldest_ms);
    agents.set(label, a);
  }
  return { agents: [...agents.values()].slice(0, 64) };
}

/** Sends the report (POST /v1/host, host-signed). Best effort: the next report follows soon. */
export async function sendReport(host: HostConfig, report: HostReport): Promise<void> {
  const body = new TextEncoder().encode(JSON.stringify(report));
  await hostFetch(host, ROUTES.hostStatus, { method: "POST", body, headers: { "content-type": "application/json" }, timeoutMs: 10_000 })
    .then((res) => res.body?.cancel())
    .catch(() => undefined);
}
