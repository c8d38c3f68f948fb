import { BudgetLeases } from "../gateway/lease.ts";
import { httpLeaseServer } from "../gateway/lease-server.ts";
import { type HostConfig, statePath, writeStateFile } from "../lib/state.ts";
import { Journal } from "../recorder/journal/index.ts";
import { readPolicyFile } from "../recorder/policy-cache.ts";
import { HarnessProcesses } from "../recorder/processes.ts";
import { PolicyPush } from "../recorder/push.ts";
import { Recorder } from "../recorder/recorder.ts";
import { SpoolReplayer } from "../recorder/replay.ts";
import { Shipper } from "../recorder/shipper.ts";
import { readSourcesFile, Sources } from "../recorder/sources/index.ts";
import { envMs } from "../lib/env.ts";
import { PolicyRefresher } from "./policy.ts";
import type { Ports } from "./ports.ts";
import type { RecorderStatus } from "./status.ts";

/** The parts of a running recorder, each built once by {@link wire}. */
export interface Running {
  host: HostConfig;
  started: number;
  log: (msg: string) => void;
  /** What the last recorder of this enrollment wrote before it stopped (or crashed). */
  previous: RecorderStatus | null;
  journal: Journal;
  recorder: Recorder;
  sources: Sources;
  shipper: Shipper;
  spoolDir: string;
  replayer: SpoolReplayer;
  leases: BudgetLeases;
  policy: PolicyRefresher;
  push: PolicyPush;
  ports: Ports;
}

/** Builds the recorder's parts over the enrollment's state directory (docs/collector.md, "The recorder"). */
export function wire(
  host: HostConfig,
  log: (msg: string) => void,
  started: number,
  previous: RecorderStatus | null,
  ports: Ports,
): Running {
  const journal = new Journal(statePath("journal"));
  const shipper = new Shipper(journal, host, {
    baseMs: envMs("OXAGEN_SHIP_BACKOFF_MS", 1000),
    maxMs: envMs("OXAGEN_SHIP_BACKOFF_MAX_MS", 60_000),
    delayMs: envMs("OXAGEN_SHIP_DELAY_MS", 300),
    log,
  });
  const spoolDir = statePath("spool");
  // The replayer reads the recorder it replays into: it exists before the first hook can arrive.
  let replayer: SpoolReplayer | null = null;
  const made: { sources?: Sources } = {};
  const recorder = new Recorder(journal, host, readPolicyFile(host), {
    log,
    processes: new HarnessProcesses(statePath("harness-processes.json"), (text) => writeStateFile("harness-processes.json", text)),
    onChange: () => shipper.kick(),
    beforeHook: () => replayer?.drain(),
    httpDown: () => ports.httpDown(),
    sources: (r) => {
      made.sources = new Sources(r, {
        load: () => readSourcesFile(statePath("sources.json")),
        save: (text) => writeStateFile("sources.json", text),
        quietMs: envMs("OXAGEN_TRANSCRIPT_QUIET_MS", 30_000),
        worktreeMs: envMs("OXAGEN_WORKTREE_MS", 15_000),
      });
      return made.sources;
    },
  });
  replayer = new SpoolReplayer(recorder, spoolDir, log);
  const leases = new BudgetLeases(httpLeaseServer(host, envMs("OXAGEN_LEASE_TIMEOUT_MS", 5000)), {
    idleMs: envMs("OXAGEN_LEASE_IDLE_MS", 120_000),
    log,
  });
  const policy = new PolicyRefresher(host, recorder, () => leases.scarce());
  const push = new PolicyPush(
    host,
    () => policy.etag,
    () => policy.apply(),
    (signed) => policy.applyPushed(signed),
    {
      baseMs: envMs("OXAGEN_PUSH_BACKOFF_MS", 1000),
      maxMs: envMs("OXAGEN_PUSH_BACKOFF_MAX_MS", 60_000),
      pollMs: envMs("OXAGEN_PUSH_POLL_MS", 30_000),
      pingMs: envMs("OXAGEN_PUSH_PING_MS", 30_000),
      log,
    },
  );
  return {
    host,
    started,
    log,
    previous,
    journal,
    recorder,
    sources: made.sources!,
    shipper,
    spoolDir,
    replayer,
    leases,
    policy,
    push,
    ports,
  };
}
