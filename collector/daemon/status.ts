import { readFileSync } from "node:fs";
import type { GatewayStats, McpStats } from "../gateway/index.ts";
import { statePath, writeStateFile } from "../lib/state.ts";
import type { Journal } from "../recorder/journal/index.ts";
import type { PushStatus } from "../recorder/push.ts";
import type { Shipper } from "../recorder/shipper.ts";
import { type SpoolSummary, spoolSummary } from "../recorder/spool.ts";
import { hostReport, sendReport } from "./report.ts";
import type { Running } from "./wire.ts";

/** recorder-status.json, read by `tacho status` (docs/collector.md). */
export interface RecorderStatus {
  v: 1;
  pid: number;
  port: number;
  started_ms: number;
  /** Rewritten every few seconds while the recorder runs; the start of a daemon_down gap after a crash. */
  heartbeat_ms: number;
  /** Set by a graceful stop. */
  stopped_ms?: number;
  /** Not yet acknowledged by the server; `spooled`: hook events waiting in the spool, not yet recorded. */
  pending: { frames: number; locks: number; bodies: number; spooled: number };
  /** What waits in the spool (recorded within seconds while the recorder runs; see docs/collector.md). */
  spool: SpoolSummary;
  /** The HTTP hook port: listening, or held by another process. */
  http: string;
  /** Per chain with anything not yet acknowledged. */
  chains: Record<
    string,
    {
      harness: string | null;
      session_id: string | null;
      frames: number;
      locks: number;
      bodies: number;
      final: boolean;
      oldest_pending_ms: number | null;
    }
  >;
  sessions_open: number;
  last_delivery_ms: number | null;
  last_error: string | null;
  policy_etag: string | null;
  policy_error: string | null;
  /** Policy fetches since the recorder started (start-up, pushes, polls). */
  policy_fetches: number;
  /** The push connection to the server (docs/collector.md, "Policy push"). */
  push: PushStatus;
  /** When each harness's hooks last reached this recorder. */
  harness_seen_ms: Record<string, number>;
  /** The model gateway: its port, whether it listens (or why not), and what it carried since the recorder started. */
  gateway?: { port: number; listening: string; mcp?: McpStats } & GatewayStats;
}

export function statusOf(o: {
  journal: Journal;
  shipper: Shipper;
  started: number;
  port: number;
  policyEtag: string | null;
  policyError: string | null;
  policyFetches: number;
  push: PushStatus;
  stopped?: number | undefined;
  seen: Record<string, number>;
  spool: SpoolSummary;
  http: string;
  gateway?: RecorderStatus["gateway"];
}): RecorderStatus {
  const chains: RecorderStatus["chains"] = {};
  let open = 0;
  for (const rec of o.journal.chains.values()) {
    if (rec.run && !rec.writer.state.final) open++;
    if (!rec.frames.length && !rec.locks.length && !rec.bodies.length) continue;
    chains[rec.chain] = {
      harness: rec.run?.harness ?? null,
      session_id: rec.run?.session_id ?? null,
      frames: rec.frames.length,
      locks: rec.locks.length,
      bodies: rec.bodies.length,
      final: rec.writer.state.final,
      oldest_pending_ms: rec.frames[0]?.t ?? null,
    };
  }
  const now = Date.now();
  return {
    v: 1,
    pid: process.pid,
    port: o.port,
    started_ms: o.started,
    heartbeat_ms: now,
    ...(o.stopped !== undefined ? { stopped_ms: o.stopped } : {}),
    pending: { ...o.shipper.pending(), spooled: o.spool.events },
    spool: o.spool,
    http: o.http,
    chains,
    sessions_open: open,
    last_delivery_ms: o.shipper.lastDeliveryMs,
    last_error: o.shipper.lastError,
    policy_etag: o.policyEtag,
    policy_error: o.policyError,
    policy_fetches: o.policyFetches,
    push: { ...o.push },
    harness_seen_ms: { ...o.seen },
    ...(o.gateway ? { gateway: o.gateway } : {}),
  };
}

/** What the last recorder of this enrollment wrote (its heartbeat or its stop: when a daemon_down gap begins). */
export function readPrevious(): RecorderStatus | null {
  try {
    return JSON.parse(readFileSync(statePath("recorder-status.json"), "utf8")) as RecorderStatus;
  } catch {
    return null;
  }
}

/** The running recorder's status now (`stopped`: the time of its graceful stop). */
export function currentStatus(r: Running, stopped?: number): RecorderStatus {
  return statusOf({
    journal: r.journal,
    shipper: r.shipper,
    started: r.started,
    port: r.host.ports.hooks,
    policyEtag: r.policy.etag,
    policyError: r.policy.error,
    policyFetches: r.policy.fetches,
    push: r.push.status,
    stopped,
    seen: { ...r.previous?.harness_seen_ms, ...r.recorder.seen },
    spool: spoolSummary(r.spoolDir),
    ...r.ports.status(),
  });
}

export function writeStatus(r: Running, stopped?: number): void {
  writeStateFile("recorder-status.json", `${JSON.stringify(currentStatus(r, stopped), null, 2)}\n`);
}

/** What only this computer can tell the server (report.ts), sent now. */
export function sendStatusReport(r: Running): Promise<void> {
  return sendReport(r.host, hostReport(r.host, currentStatus(r)));
}
