import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostChainId } from "../../protocol/index.ts";
import { useNodeCrypto } from "../lib/node-crypto.ts";
import { statePath, writeStateFile, type HostConfig } from "../lib/state.ts";
import type { ChainRecord } from "./journal.ts";
import { Journal } from "./journal.ts";
import { listen } from "./listener.ts";
import type { HookRequest } from "./mapper.ts";
import { fetchPolicy, readPolicyFile } from "./policy-cache.ts";
import { HarnessProcesses } from "./processes.ts";
import { parseRequest, Recorder } from "./recorder.ts";
import { Shipper } from "./shipper.ts";
import { readSourcesFile, Sources } from "./sources/index.ts";
import { takeSpool } from "./spool.ts";
import { statusOf, type RecorderStatus } from "./status.ts";
import { hostReport, sendReport } from "./report.ts";

function envMs(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

function readPrevious(): RecorderStatus | null {
  try {
    return JSON.parse(readFileSync(statePath("recorder-status.json"), "utf8")) as RecorderStatus;
  } catch {
    return null;
  }
}

/** A running recorder: its port and an idempotent graceful stop. */
export interface Daemon {
  port: number;
  stop(): Promise<void>;
}

/** Starts the recorder in this process (see docs/collector.md, "The recorder"). */
export async function startDaemon(host: HostConfig, log: (msg: string) => void): Promise<Daemon> {
  useNodeCrypto();
  const started = Date.now();
  const previous = readPrevious();
  const journal = new Journal(statePath("journal"));
  const recorder = new Recorder(journal, host, readPolicyFile(host));
  recorder.log = log;
  recorder.processes = new HarnessProcesses(statePath("harness-processes.json"), (text) => writeStateFile("harness-processes.json", text));
  const sources = new Sources(recorder, {
    load: () => readSourcesFile(statePath("sources.json")),
    save: (text) => writeStateFile("sources.json", text),
    quietMs: envMs("OXAGEN_TRANSCRIPT_QUIET_MS", 30_000),
    worktreeMs: envMs("OXAGEN_WORKTREE_MS", 15_000),
  });
  recorder.sources = sources;
  const shipper = new Shipper(journal, host, {
    baseMs: envMs("OXAGEN_SHIP_BACKOFF_MS", 1000),
    maxMs: envMs("OXAGEN_SHIP_BACKOFF_MAX_MS", 60_000),
    delayMs: envMs("OXAGEN_SHIP_DELAY_MS", 300),
    log,
  });
  recorder.onChange = () => shipper.kick();

  const wentDown = previous?.stopped_ms ?? previous?.heartbeat_ms ?? null;
  replaySpool(recorder, true, wentDown, started, log);
  const listener = await listen(host.ports.hooks, {
    line: (request) => {
      const req = parseRequest(request);
      if (!req) return { v: 1, answer: {}, error: "not a hook request (see docs/collector.md)" };
      return { v: 1, answer: recorder.handle(req) };
    },
    http: (label, payload) => {
      if (payload === null || typeof payload !== "object" || Array.isArray(payload)) return {};
      return recorder.handle({
        id: null,
        t: Date.now(),
        source: "http",
        harness: label,
        agent: null,
        event: payload as Record<string, unknown>,
      });
    },
    health: () => ({ ok: true, v: 1, pid: process.pid, port: host.ports.hooks, started_ms: started }),
    log,
  });
  // Events spooled while the first replay ran: same outage, so no second gap.
  replaySpool(recorder, false, null, Date.now(), log);
  writeFileSync(statePath("recorder.pid"), `${process.pid}\n`, { mode: 0o600 });

  let policyEtag = recorder.policy?.etag ?? null;
  let policyError: string | null = null;
  const currentStatus = (stopped?: number) =>
    statusOf({
      journal,
      shipper,
      started,
      port: host.ports.hooks,
      policyEtag,
      policyError,
      stopped,
      seen: { ...previous?.harness_seen_ms, ...recorder.seen },
    });
  const writeStatus = (stopped?: number) => writeStateFile("recorder-status.json", `${JSON.stringify(currentStatus(stopped), null, 2)}\n`);
  const report = () => sendReport(host, hostReport(host, currentStatus()));
  const refreshPolicy = async () => {
    try {
      const next = await fetchPolicy(host, policyEtag, Date.now());
      if (next !== "unchanged") {
        recorder.policy = next;
        policyEtag = next.etag;
      }
      policyError = null;
    } catch (err) {
      policyError = (err as Error).message;
    }
  };
  // A failing timer (disk full, say) must not take the recorder down: nothing would restart it.
  const every = (ms: number, work: () => unknown) =>
    setInterval(() => {
      try {
        const done = work();
        if (done instanceof Promise) done.catch((err: unknown) => log(`timer failed: ${(err as Error).message}`));
      } catch (err) {
        log(`timer failed: ${(err as Error).message}`);
      }
    }, ms);
  const timers = [
    every(envMs("OXAGEN_LOCK_INTERVAL_MS", 60_000), () => {
      recorder.endQuiet(Date.now());
      recorder.lockAll(Date.now());
    }),
    every(envMs("OXAGEN_PID_POLL_MS", 5000), () => recorder.endGone(Date.now())),
    every(envMs("OXAGEN_SOURCES_INTERVAL_MS", 5000), () => sources.tick()),
    every(envMs("OXAGEN_HOOKLESS_INTERVAL_MS", 60_000), () => sources.scanHookless(started)),
    every(envMs("OXAGEN_POLICY_INTERVAL_MS", 5 * 60_000), () => void refreshPolicy()),
    every(envMs("OXAGEN_STATUS_INTERVAL_MS", 2000), () => writeStatus()),
    // Also what keeps the server from taking this computer for down (it waits 15 minutes).
    every(envMs("OXAGEN_REPORT_INTERVAL_MS", 2 * 60_000), () => void report()),
  ];
  for (const t of timers) t.unref();
  void refreshPolicy();
  void report();
  writeStatus();
  shipper.kick(0);
  log(`recorder ${process.pid} listening on 127.0.0.1:${host.ports.hooks}`);

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      for (const t of timers) clearInterval(t);
      await listener.close();
      recorder.lockAll(Date.now());
      shipper.kick(0);
      // A last chance to deliver; the timer is ref'd so the process stays up for it.
      await new Promise((r) => setTimeout(r, envMs("OXAGEN_STOP_FLUSH_MS", 1500)));
      await shipper.stop();
      writeStatus(Date.now());
      journal.close();
      try {
        if (readFileSync(statePath("recorder.pid"), "utf8").trim() === String(process.pid)) rmSync(statePath("recorder.pid"));
      } catch {
        // Already gone.
      }
      log(`recorder ${process.pid} stopped`);
    })();
    return stopping;
  };
  return { port: host.ports.hooks, stop };
}

/**
 * Replays the spool in order, exactly once by event id. With `gaps`, each session that was running
 * (or appears in the spool) gets one daemon_down gap, placed before its first replayed step (after
 * it when that step starts the session), and a spool_overflow gap when hooks were dropped.
 */
function replaySpool(recorder: Recorder, gaps: boolean, wentDown: number | null, now: number, log: (m: string) => void): void {
  const spool = takeSpool(statePath("spool"));
  const requests = spool.lines.map(parseRequest).filter((r): r is HookRequest => r !== null);
  const firstSpooled = requests.reduce<number | null>(
    (m, r) => (r.spooled_ms !== undefined && (m === null || r.spooled_ms < m) ? r.spooled_ms : m),
    null,
  );
  const from = wentDown ?? firstSpooled;
  const gapped = new Set<string>();
  const gap = (rec: ChainRecord | null | undefined) => {
    if (!gaps || !rec || gapped.has(rec.chain) || rec.writer.state.final) return;
    gapped.add(rec.chain);
    const fromMs = Math.min(from ?? rec.lastT ?? now, now);
    recorder.append(rec, "telemetry_gap", { path: "recorder", cause: "daemon_down", from_ms: fromMs, to_ms: now }, fromMs);
  };
  const running = gaps ? recorder.running() : [];
  let replayed = 0;
  for (const req of requests) {
    if (req.id !== null && recorder.journal.has(req.id)) continue;
    const s = gaps ? recorder.sessionOf(req) : null;
    if (s && !gapped.has(s.chain)) {
      const existed = recorder.journal.chains.get(s.chain);
      if (existed || req.event.hook_event_name !== "SessionStart") gap(existed ?? recorder.chainOf(req));
      recorder.handle(req);
      gap(recorder.journal.chains.get(s.chain));
    } else recorder.handle(req);
    replayed++;
  }
  for (const rec of running) gap(rec);
  if (gaps && spool.dropped > 0) {
    const chains = [...gapped].map((c) => recorder.journal.chains.get(c)).filter((r): r is ChainRecord => !!r && !r.writer.state.final);
    const targets = chains.length ? chains : [recorder.journal.open(hostChainId(recorder.host.host_id), null)];
    for (const rec of targets)
      recorder.append(
        rec,
        "telemetry_gap",
        { path: "recorder", cause: "spool_overflow", dropped: spool.dropped, from_ms: from ?? now, to_ms: now },
        now,
      );
  }
  spool.done();
  if (replayed || spool.dropped) log(`replayed ${replayed} spooled events (${spool.dropped} dropped)`);
}
