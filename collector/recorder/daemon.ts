import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { emptyStats, type Gateway, startGateway } from "../gateway/index.ts";
import { BudgetLeases } from "../gateway/lease.ts";
import { httpLeaseServer } from "../gateway/lease-server.ts";
import { useNodeCrypto } from "../lib/node-crypto.ts";
import { readHost, stateDir, statePath, writeStateFile, type HostConfig } from "../lib/state.ts";
import { Journal } from "./journal/index.ts";
import type { Listening } from "../lib/loopback.ts";
import { listenHttp, listenSocket } from "./listener.ts";
import type { HookRequest } from "./mapper.ts";
import { fetchPolicy, readPolicyFile } from "./policy-cache.ts";
import { PolicyPush } from "./push.ts";
import { HarnessProcesses } from "./processes.ts";
import { parseRequest, Recorder } from "./recorder.ts";
import { Shipper } from "./shipper.ts";
import { readSourcesFile, Sources } from "./sources/index.ts";
import { SpoolReplayer } from "./replay.ts";
import { appendSpool, spoolSummary } from "./spool.ts";
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
  /** Settles when the recorder's enrollment is gone (host.json removed): the caller should stop it. */
  orphaned: Promise<void>;
}

/** Starts the recorder in this process (see docs/collector.md, "The recorder"). */
export async function startDaemon(host: HostConfig, log: (msg: string) => void): Promise<Daemon> {
  useNodeCrypto();
  const started = Date.now();
  const dir = resolve(stateDir());
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The socket first: it is also what keeps a second recorder of this enrollment off the journal.
  // Until the journal is loaded, a hook gets no answer and spools (replayed just below).
  let ready: { recorder: Recorder } | null = null;
  let http: Listening | null = null;
  let httpError: string | null = null;
  let gatewayError: string | null = null;
  let gateway: Gateway | null = null;
  let bound = false;
  const health = () => ({
    ok: true,
    v: 1,
    pid: process.pid,
    port: host.ports.hooks,
    started_ms: started,
    http: http ? "listening" : "unavailable",
    ...(httpError && !http ? { http_error: httpError } : {}),
    gateway_port: host.ports.gateway,
    gateway: gateway ? "listening" : "unavailable",
    ...(gatewayError && !gateway ? { gateway_error: gatewayError } : {}),
    /** Both ports were tried once: until then "unavailable" means "not yet". */
    bound,
  });
  const socket = await listenSocket(dir, {
    line: (request) => {
      if (!ready) return { v: 1, error: "the recorder is starting" };
      const req = parseRequest(request);
      if (!req) return { v: 1, answer: {}, error: "not a hook request (see docs/collector.md)" };
      return { v: 1, answer: ready.recorder.handle(req) };
    },
    health,
    log,
  });
  let orphan: () => void = () => {};
  const orphaned = new Promise<void>((r) => {
    orphan = r;
  });
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
  const spoolDir = statePath("spool");
  const replayer = new SpoolReplayer(recorder, spoolDir, log);
  recorder.beforeHook = () => replayer.drain();

  replayer.drain({ start: true, wentDown: previous?.stopped_ms ?? previous?.heartbeat_ms ?? null, now: started });
  ready = { recorder };
  const secret = hookSecret(host);
  const bindHttp = async () => {
    if (http) return;
    try {
      http = await listenHttp(host.ports.hooks, {
        http: (label, payload) => httpHook(recorder, spoolDir, label, payload),
        secret,
        health,
        log,
      });
      log(`HTTP hooks on 127.0.0.1:${host.ports.hooks}`);
      httpError = null;
    } catch (err) {
      // A stranger holding the port keeps HTTP hooks out, not the recorder: its own socket still works.
      const why = portError(err);
      if (httpError !== why)
        log(
          `HTTP hooks unavailable: cannot listen on 127.0.0.1:${host.ports.hooks}: ${why}; Claude Code's tool results are not received until it can (retrying; tacho enroll --hooks-port N picks another)`,
        );
      httpError = why;
    }
  };
  recorder.httpDown = () => (http ? null : (httpError ?? "not listening yet"));
  await bindHttp();
  const gatewayStats = emptyStats();
  const leases = new BudgetLeases(httpLeaseServer(host), { idleMs: envMs("OXAGEN_LEASE_IDLE_MS", 120_000), log });
  const bindGateway = async () => {
    if (gateway) return;
    try {
      gateway = await startGateway(host, recorder, secret, gatewayStats, leases);
      gatewayError = null;
      log(`model gateway on 127.0.0.1:${host.ports.gateway}`);
    } catch (err) {
      // As for HTTP hooks: the recorder runs without it, and tacho status says why.
      const why = portError(err);
      if (gatewayError !== why)
        log(
          `model gateway unavailable: cannot listen on 127.0.0.1:${host.ports.gateway}: ${why}; model calls pointed at it fail until it can (retrying; tacho enroll --gateway-port N picks another)`,
        );
      gatewayError = why;
    }
  };
  await bindGateway();
  bound = true;
  // Events spooled while the first replay ran: same outage, so no second gap.
  replayer.drain({ sameOutage: true });
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
      policyFetches,
      push: push.status,
      stopped,
      seen: { ...previous?.harness_seen_ms, ...recorder.seen },
      spool: spoolSummary(spoolDir),
      http: http
        ? host.hook_secret
          ? "listening"
          : "listening without a hook secret (re-run tacho enroll)"
        : `port unavailable: ${httpError ?? "not started"}`,
      gateway: {
        port: host.ports.gateway,
        listening: gateway ? "listening" : `port unavailable: ${gatewayError ?? "not started"}`,
        ...gatewayStats,
      },
    });
  const writeStatus = (stopped?: number) => writeStateFile("recorder-status.json", `${JSON.stringify(currentStatus(stopped), null, 2)}\n`);
  const report = () => sendReport(host, hostReport(host, currentStatus()));
  let policyFetches = 0;
  let fetching: Promise<void> | null = null;
  let again = false;
  // One fetch at a time; a push that arrives during one gets a fetch of its own right after.
  const refreshPolicy = async (): Promise<void> => {
    if (fetching) {
      again = true;
      return fetching;
    }
    fetching = (async () => {
      do {
        again = false;
        policyFetches++;
        try {
          const next = await fetchPolicy(host, policyEtag, Date.now());
          if (next !== "unchanged") {
            recorder.policy = next;
            policyEtag = next.etag;
            // A budget reached its limit: idle slices give their room back (docs/collector.md, "Budget reservations").
            if (next.policy.exhausted_budgets?.length) leases.scarce();
          }
          policyError = null;
        } catch (err) {
          policyError = (err as Error).message;
        }
      } while (again);
    })().finally(() => {
      fetching = null;
    });
    return fetching;
  };
  // What a push acknowledges: a fetch that started after it, verified and now deciding every hook.
  const applyPolicy = async (): Promise<string | null> => {
    await refreshPolicy();
    if (policyError !== null) throw new Error(policyError);
    return policyEtag;
  };
  const push = new PolicyPush(host, () => policyEtag, applyPolicy, {
    baseMs: envMs("OXAGEN_PUSH_BACKOFF_MS", 1000),
    maxMs: envMs("OXAGEN_PUSH_BACKOFF_MAX_MS", 60_000),
    pollMs: envMs("OXAGEN_PUSH_POLL_MS", 30_000),
    pingMs: envMs("OXAGEN_PUSH_PING_MS", 30_000),
    log,
  });
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
    // Budget a run's gateway calls no longer need goes back to the workspace (ended or quiet runs).
    every(envMs("OXAGEN_LEASE_SWEEP_MS", 30_000), () =>
      leases.sweep((run) => recorder.journal.chains.get(run)?.writer.state.final === true),
    ),
    every(envMs("OXAGEN_SOURCES_INTERVAL_MS", 5000), () => sources.tick()),
    every(envMs("OXAGEN_HOOKLESS_INTERVAL_MS", 60_000), () => sources.scanHookless(started)),
    every(envMs("OXAGEN_POLICY_INTERVAL_MS", 5 * 60_000), () => void refreshPolicy()),
    every(envMs("OXAGEN_STATUS_INTERVAL_MS", 2000), () => {
      // An enrollment removed under a running recorder (its state directory deleted): nothing to record for.
      if (!existsSync(statePath("host.json"))) return orphan();
      writeStatus();
    }),
    // A hook that could not reach the recorder spools; nothing may wait there while it runs.
    every(envMs("OXAGEN_SPOOL_INTERVAL_MS", 2000), () => replayer.drain()),
    every(envMs("OXAGEN_HTTP_RETRY_MS", 10_000), () => Promise.all([bindHttp(), bindGateway()])),
    // Also what keeps the server from taking this computer for down (it waits 15 minutes).
    every(envMs("OXAGEN_REPORT_INTERVAL_MS", 2 * 60_000), () => void report()),
  ];
  for (const t of timers) t.unref();
  // The push connection's first open fetches the policy; until it opens, its poll does.
  void refreshPolicy();
  push.start();
  void report();
  writeStatus();
  shipper.kick(0);
  log(`recorder ${process.pid} listening on ${statePath("recorder.sock")}`);

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      for (const t of timers) clearInterval(t);
      push.stop();
      await Promise.all([socket.close(), (http as Listening | null)?.close(), (gateway as Gateway | null)?.listening.close()]);
      // What the runs' slices hold free goes back while the last frames ship (a down server waits out its timeout meanwhile).
      const givingBack = leases.stop();
      const enrolled = existsSync(statePath("host.json"));
      // The gateway's calls still on a worker thread take their place now, so the last locks cover them.
      journal.readyAll();
      if (enrolled) {
        replayer.drain();
        recorder.lockAll(Date.now());
      }
      shipper.kick(0);
      // A last chance to deliver; the timer is ref'd so the process stays up for it.
      await new Promise((r) => setTimeout(r, envMs("OXAGEN_STOP_FLUSH_MS", 1500)));
      await givingBack;
      await shipper.stop();
      if (enrolled) writeStatus(Date.now());
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
  return { port: host.ports.hooks, stop, orphaned };
}

/** Why a port could not be listened on, in words. */
function portError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") return "another program (or another enrollment's recorder) is listening there";
  if (code === "EACCES") return "this user may not listen there";
  return (err as Error).message;
}

/** The enrollment's hook secret, re-read when host.json changes (a re-enroll adds one to an older enrollment). */
function hookSecret(host: HostConfig): () => string | null {
  let seen = -1;
  let secret = host.hook_secret ?? null;
  return () => {
    try {
      const mtime = statSync(statePath("host.json")).mtimeMs;
      if (mtime !== seen) {
        seen = mtime;
        secret = readHost()?.hook_secret ?? secret;
      }
    } catch {
      // Unreadable now: keep the one we have.
    }
    return secret;
  };
}

/**
 * One HTTP hook. When it cannot be recorded it is spooled (replayed later, given up as a gap
 * only after several attempts) and the error goes on to the listener, which answers 500.
 */
export function httpHook(recorder: Recorder, spoolDir: string, label: string, payload: unknown): Record<string, unknown> {
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) return {};
  const req: HookRequest = {
    id: `h-${randomUUID()}`,
    t: Date.now(),
    source: "http",
    harness: label,
    agent: null,
    event: payload as Record<string, unknown>,
  };
  try {
    return recorder.handle(req);
  } catch (err) {
    appendSpool(spoolDir, { ...req, v: 1, spooled_ms: Date.now() });
    throw err;
  }
}
