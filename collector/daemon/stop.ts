import { existsSync, readFileSync, rmSync } from "node:fs";
import type { Listening } from "../lib/loopback.ts";
import { statePath } from "../lib/state.ts";
import { envMs } from "../lib/env.ts";
import { writeStatus } from "./status.ts";
import type { Running } from "./wire.ts";

/**
 * The recorder's graceful stop, idempotent: no new hook or call is taken, the calls still being
 * prepared take their place, every chain is locked, the last frames get a chance to ship while the
 * budget slices go back, and the journal is closed.
 */
export function stopper(r: Running, socket: Listening, timers: NodeJS.Timeout[]): () => Promise<void> {
  let stopping: Promise<void> | null = null;
  return () => {
    stopping ??= stop(r, socket, timers);
    return stopping;
  };
}

async function stop(r: Running, socket: Listening, timers: NodeJS.Timeout[]): Promise<void> {
  // `tacho daemon stop` waits 15 s for the process to end: all of a stop's waiting on the server fits in this.
  const deadline = Date.now() + envMs("OXAGEN_STOP_MS", 10_000);
  const { journal, recorder, shipper, replayer } = r;
  for (const t of timers) clearInterval(t);
  r.push.stop();
  await Promise.all([socket.close(), r.ports.close()]);
  // What the runs' slices hold free goes back while the last frames ship (a down server waits out its timeout meanwhile).
  const givingBack = r.leases.stop();
  const enrolled = existsSync(statePath("host.json"));
  // The gateway's calls still on a worker thread take their place now, so the last locks cover them.
  journal.readyAll();
  if (enrolled) {
    replayer.drain();
    recorder.lockAll(Date.now());
  }
  shipper.kick(0);
  // A last chance to deliver; the timer is ref'd so the process stays up for it.
  await new Promise((done) => setTimeout(done, envMs("OXAGEN_STOP_FLUSH_MS", 1500)));
  await givingBack;
  await shipper.stop(deadline - Date.now());
  if (enrolled) writeStatus(r, Date.now());
  journal.close();
  try {
    if (readFileSync(statePath("recorder.pid"), "utf8").trim() === String(process.pid)) rmSync(statePath("recorder.pid"));
  } catch {
    // Already gone.
  }
  r.log(`recorder ${process.pid} stopped`);
}
