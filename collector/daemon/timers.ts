import { existsSync } from "node:fs";
import { statePath } from "../lib/state.ts";
import { envMs } from "../lib/env.ts";
import { sendStatusReport, writeStatus } from "./status.ts";
import type { Running } from "./wire.ts";

/** Runs `work` every `ms`; a failing timer (disk full, say) must not take the recorder down: nothing would restart it. */
export function every(ms: number, work: () => unknown, log: (msg: string) => void): NodeJS.Timeout {
  const timer = setInterval(() => {
    try {
      const done = work();
      if (done instanceof Promise) done.catch((err: unknown) => log(`timer failed: ${(err as Error).message}`));
    } catch (err) {
      log(`timer failed: ${(err as Error).message}`);
    }
  }, ms);
  timer.unref();
  return timer;
}

/** The recorder's timers (each period can be set for tests); `orphan` when the enrollment is gone. */
export function startTimers(r: Running, orphan: () => void): NodeJS.Timeout[] {
  const { recorder, sources, leases, replayer, log } = r;
  const at = (name: string, fallback: number, work: () => unknown) => every(envMs(name, fallback), work, log);
  return [
    at("OXAGEN_LOCK_INTERVAL_MS", 60_000, () => {
      recorder.endQuiet(Date.now());
      recorder.lockAll(Date.now());
    }),
    at("OXAGEN_PID_POLL_MS", 5000, () => recorder.endGone(Date.now())),
    // Budget a run's gateway calls no longer need goes back to the workspace (ended or quiet runs).
    at("OXAGEN_LEASE_SWEEP_MS", 30_000, () => leases.sweep((run) => r.journal.chains.get(run)?.writer.state.final === true)),
    at("OXAGEN_SOURCES_INTERVAL_MS", 5000, () => sources.tick()),
    at("OXAGEN_HOOKLESS_INTERVAL_MS", 60_000, () => sources.scanHookless(r.started)),
    at("OXAGEN_POLICY_INTERVAL_MS", 5 * 60_000, () => void r.policy.refresh()),
    at("OXAGEN_STATUS_INTERVAL_MS", 2000, () => {
      // An enrollment removed under a running recorder (its state directory deleted): nothing to record for.
      if (!existsSync(statePath("host.json"))) return orphan();
      writeStatus(r);
    }),
    // A hook that could not reach the recorder spools; nothing may wait there while it runs.
    at("OXAGEN_SPOOL_INTERVAL_MS", 2000, () => replayer.drain()),
    at("OXAGEN_HTTP_RETRY_MS", 10_000, () => r.ports.retry()),
    // Also what keeps the server from taking this computer for down (it waits 15 minutes).
    at("OXAGEN_REPORT_INTERVAL_MS", 2 * 60_000, () => void sendStatusReport(r)),
  ];
}
