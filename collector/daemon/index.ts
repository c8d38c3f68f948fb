// The recorder process: `tacho daemon start` runs startDaemon (docs/collector.md, "The recorder").
import { mkdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { useNodeCrypto } from "../lib/node-crypto.ts";
import { type HostConfig, stateDir, statePath } from "../lib/state.ts";
import { listenSocket } from "../recorder/listener.ts";
import type { Recorder } from "../recorder/recorder.ts";
import { hookSecret, httpHook, lineAnswer } from "./hooks.ts";
import { Ports } from "./ports.ts";
import { readPrevious, sendStatusReport, writeStatus } from "./status.ts";
import { stopper } from "./stop.ts";
import { startTimers } from "./timers.ts";
import { wire } from "./wire.ts";

/** A running recorder: its port and an idempotent graceful stop. */
export interface Daemon {
  port: number;
  stop(): Promise<void>;
  /** Settles when the recorder's enrollment is gone (host.json removed): the caller should stop it. */
  orphaned: Promise<void>;
}

/** Starts the recorder in this process. */
export async function startDaemon(host: HostConfig, log: (msg: string) => void): Promise<Daemon> {
  useNodeCrypto();
  const started = Date.now();
  const dir = resolve(stateDir());
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ports = new Ports(host, log, started);
  // The socket first: it is also what keeps a second recorder of this enrollment off the journal.
  // Until the journal is loaded, a hook gets no answer and spools (replayed just below).
  let ready: Recorder | null = null;
  const socket = await listenSocket(dir, { line: (request) => lineAnswer(ready, request), health: () => ports.health(), log });
  const previous = readPrevious();
  const r = wire(host, log, started, previous, ports);
  r.replayer.drain({ start: true, wentDown: previous?.stopped_ms ?? previous?.heartbeat_ms ?? null, now: started });
  ready = r.recorder;
  const secret = hookSecret(host);
  const http = (label: string, payload: unknown) => httpHook(r.recorder, r.spoolDir, label, payload);
  await ports.bind({ recorder: r.recorder, http, secret, leases: r.leases });
  // Events spooled while the first replay ran: same outage, so no second gap.
  r.replayer.drain({ sameOutage: true });
  writeFileSync(statePath("recorder.pid"), `${process.pid}\n`, { mode: 0o600 });
  let orphan: () => void = () => {};
  const orphaned = new Promise<void>((settle) => {
    orphan = settle;
  });
  const timers = startTimers(r, () => orphan());
  // The push connection's first open fetches the policy; until it opens, its poll does.
  void r.policy.refresh();
  r.push.start();
  void sendStatusReport(r);
  writeStatus(r);
  r.shipper.kick(0);
  log(`recorder ${process.pid} listening on ${statePath("recorder.sock")}`);
  return { port: host.ports.hooks, stop: stopper(r, socket, timers), orphaned };
}
