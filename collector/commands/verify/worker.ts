// The second thread of `oxagen verify` (see parallel.ts): checks the lock signatures when asked,
// then blocks of frame lines as they wait, oldest first, until told to stop.
import { receiveMessageOnPort, workerData } from "node:worker_threads";
// Only the modules it needs (no schemas), to start fast.
import { checkFrameLines } from "../../../protocol/frame-lines.ts";
import { lockSignatureValid } from "../../../protocol/lock-signature.ts";
import type { LockSignatureJob } from "../../../protocol/verify-check.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import {
  type CheckerSetup,
  DONE,
  END,
  FROM,
  type FromWorker,
  LOCKS,
  ORDER,
  PENDING,
  READY,
  START,
  STATE,
  STOP,
  slotWord,
  TAKEN,
  type ToWorker,
  WAKE,
} from "./parallel.ts";

const setup = workerData as CheckerSetup;
const control = new Int32Array(setup.control);
const slots = setup.slots.map((b) => Buffer.from(b));
const prevs = new Uint8Array(setup.prevs);
let config: { chainId: string; bodies: boolean } | null = null;
let locks: LockSignatureJob[] = [];

useNodeCrypto();
Atomics.store(control, READY, 1);
Atomics.notify(control, READY);
run();

function receive(): void {
  for (let m = receiveMessageOnPort(setup.port); m; m = receiveMessageOnPort(setup.port)) {
    const message = m.message as ToWorker;
    if ("locks" in message) locks = message.locks;
    else config = message;
  }
}

function post(message: FromWorker): void {
  setup.port.postMessage(message);
}

// Jobs are taken by compare-and-swap; their messages (posted before the job was offered) are read
// after. A job this thread fails at is offered back, and this thread stops: the main thread checks
// it, and everything after, itself. (A function, not module code: V8 optimizes it.)
function run(): void {
  while (Atomics.load(control, STOP) === 0) {
    const wake = Atomics.load(control, WAKE);
    if (Atomics.compareExchange(control, LOCKS, PENDING, TAKEN) === PENDING) {
      receive();
      if (!attempt(LOCKS, () => post({ locks: locks.map((j) => j.key !== null && lockSignatureValid(j, j.key)) }))) return;
      locks = [];
      continue;
    }
    const slot = oldestPending();
    if (slot < 0) {
      Atomics.wait(control, WAKE, wake, 1000);
      continue;
    }
    const state = slotWord(slot, STATE);
    if (Atomics.compareExchange(control, state, PENDING, TAKEN) !== PENDING) continue;
    receive();
    const ok = attempt(state, () => {
      if (!config) throw new Error("no chain to check");
      const job = { ...config, from: control[slotWord(slot, FROM)]!, prev: prevs.slice(32 * slot, 32 * slot + 32) };
      const chunk = checkFrameLines(slots[slot]!, control[slotWord(slot, START)]!, control[slotWord(slot, END)]!, job);
      post({ order: control[slotWord(slot, ORDER)]!, chunk });
    });
    if (!ok) return;
  }
}

function attempt(state: number, work: () => void): boolean {
  try {
    work();
    Atomics.store(control, state, DONE);
    return true;
  } catch {
    Atomics.store(control, state, PENDING);
    return false;
  } finally {
    Atomics.notify(control, state);
  }
}

function oldestPending(): number {
  let best = -1;
  for (let slot = 0; slot < slots.length; slot++) {
    if (Atomics.load(control, slotWord(slot, STATE)) !== PENDING) continue;
    if (best < 0 || control[slotWord(slot, ORDER)]! < control[slotWord(best, ORDER)]!) best = slot;
  }
  return best;
}
