import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import {
  checkFrameLines,
  type FrameChecker,
  type FrameChunk,
  type FrameLinesJob,
  type LockSignatureJob,
  SLOT_BYTES,
} from "../../../protocol/index.ts";

/**
 * Control words (Int32): a wake-up counter the worker sleeps on, a stop flag, the lock signature
 * job's state, then for each slot its job's state, byte range, first frame and submission order.
 */
export const WAKE = 0;
export const STOP = 1;
export const LOCKS = 2;
export const READY = 3;
const HEADER_WORDS = 4;
const SLOT_WORDS = 5;
export const slotWord = (slot: number, field: 0 | 1 | 2 | 3 | 4) => HEADER_WORDS + slot * SLOT_WORDS + field;
/** Slot fields: state, start, end, first frame, submission order. */
export const STATE = 0;
export const START = 1;
export const END = 2;
export const FROM = 3;
export const ORDER = 4;

/** A job's state: nothing to do, waiting, the worker has it, the worker answered, this thread has it. */
export const FREE = 0;
export const PENDING = 1;
export const TAKEN = 2;
export const DONE = 3;
const MINE = 4;

/** Blocks of frame lines in flight at once: enough that both threads always find one waiting. */
const SLOT_COUNT = 6;
/** How long this thread waits for one of the worker's answers before doing the work itself. */
const WAIT_LIMIT_MS = 30_000;
/**
 * The worker's heap: it holds one block's strings and results at a time, so a small young
 * generation and old space do; measured on a 1,000,000-frame bundle, they take about 25 MB off
 * the command's peak RSS and change its time by less than the noise.
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 64 };

/** How a {@link parallelChecker} runs (the defaults are what `oxagen verify` uses). */
export interface ParallelOptions {
  waitLimitMs?: number;
}

/** What the worker is handed when it starts. */
export interface CheckerSetup {
  slots: SharedArrayBuffer[];
  control: SharedArrayBuffer;
  /** The `prev` hash of each slot's job (32 bytes a slot). */
  prevs: SharedArrayBuffer;
  port: MessagePort;
}

/** The worker's messages: the chain and whether bodies are listed (once), then answers. */
export type ToWorker = { chainId: string; bodies: boolean } | { locks: LockSignatureJob[] };
export type FromWorker = { order: number; chunk: FrameChunk } | { locks: boolean[] };

/**
 * A {@link FrameChecker} that shares the frame lines with a second thread: each block's lines go
 * to whichever thread is free first (this one takes a block whenever two are waiting), and the
 * lock signatures go to the worker first. Whatever the worker does not deliver, this thread
 * checks itself, so a worker that dies or stalls changes nothing but the time taken.
 */
export function parallelChecker(options: ParallelOptions = {}): FrameChecker & {
  close(): void;
  /** Blocks of frame lines checked by each thread. */
  readonly checked: { here: number; worker: number };
  /** Starts the worker now and returns once it waits for work (tests use it to be sure it takes some). */
  ready(): void;
  /** Returns once slot `slot`'s block is no longer waiting to be taken. */
  taken(slot: number): void;
} {
  const waitLimit = options.waitLimitMs ?? WAIT_LIMIT_MS;
  const buffers = Array.from({ length: SLOT_COUNT }, () => new SharedArrayBuffer(SLOT_BYTES));
  // Buffers, not plain Uint8Arrays: the reader finds line ends with Buffer's native indexOf.
  const slots = buffers.map((b) => Buffer.from(b));
  const control = new Int32Array(new SharedArrayBuffer(4 * (HEADER_WORDS + SLOT_COUNT * SLOT_WORDS)));
  const prevs = new Uint8Array(new SharedArrayBuffer(32 * SLOT_COUNT));
  const { port1, port2 } = new MessageChannel();
  const setup: CheckerSetup = {
    slots: buffers,
    control: control.buffer as SharedArrayBuffer,
    prevs: prevs.buffer as SharedArrayBuffer,
    port: port2,
  };
  // Started with the first job: a version-1 bundle never gives it one.
  let worker: Worker | null = null;
  const start = () => {
    if (worker) return;
    worker = new Worker(new URL("./worker.ts", import.meta.url), {
      workerData: setup,
      transferList: [port2],
      resourceLimits: WORKER_LIMITS,
    });
    worker.unref();
  };
  const checked = { here: 0, worker: 0 };

  const jobs: (FrameLinesJob & { start: number; end: number; order: number })[] = [];
  const done = new Map<number, FrameChunk>();
  let submitted = 0;
  let delivered = 0;
  let configured = false;
  let lockAnswers: boolean[] | null = null;

  // A worker that does not answer in time is given up on: from then on this thread checks
  // everything, and the state words (which the worker may still write) are no longer read.
  let alone = false;
  const stopWorker = () => {
    Atomics.store(control, STOP, 1);
    Atomics.add(control, WAKE, 1);
    Atomics.notify(control, WAKE);
    void worker?.terminate();
  };
  const state = (slot: number) => Atomics.load(control, slotWord(slot, STATE));
  const receive = () => {
    for (let m = receiveMessageOnPort(port1); m; m = receiveMessageOnPort(port1)) {
      const message = m.message as FromWorker;
      if ("locks" in message) lockAnswers = message.locks;
      else if (!done.has(message.order)) {
        done.set(message.order, message.chunk);
        checked.worker++;
      }
    }
  };
  const runHere = (slot: number) => {
    const job = jobs[slot]!;
    if (!done.has(job.order)) {
      done.set(job.order, checkFrameLines(slots[slot]!, job.start, job.end, job));
      checked.here++;
    }
    if (!alone) Atomics.store(control, slotWord(slot, STATE), FREE);
  };
  // Makes sure a slot's job is answered: takes it if nobody has; if the worker has it, checks
  // the blocks still waiting here first, then waits for the worker.
  const settle = (slot: number) => {
    const word = slotWord(slot, STATE);
    for (;;) {
      if (alone) return runHere(slot);
      if (Atomics.compareExchange(control, word, PENDING, MINE) === PENDING) return runHere(slot);
      const s = state(slot);
      if (s === FREE) return;
      if (s === DONE) {
        receive();
        return runHere(slot);
      }
      const other = pendingSlots()[0];
      if (other && Atomics.compareExchange(control, slotWord(other.slot, STATE), PENDING, MINE) === PENDING) {
        runHere(other.slot);
        continue;
      }
      if (Atomics.wait(control, word, TAKEN, waitLimit) === "timed-out") {
        alone = true;
        stopWorker();
      }
    }
  };
  const pendingSlots = () =>
    alone
      ? []
      : jobs
          .map((job, slot) => ({ job, slot }))
          .filter(({ slot }) => state(slot) === PENDING)
          .sort((a, b) => a.job.order - b.job.order);

  return {
    slots,
    checked,
    start,
    submit(slot, begin, end, job) {
      const order = submitted++;
      jobs[slot] = { ...job, start: begin, end, order };
      if (alone) return runHere(slot);
      start();
      if (!configured) {
        port1.postMessage({ chainId: job.chainId, bodies: job.bodies } satisfies ToWorker);
        configured = true;
      }
      prevs.set(job.prev, 32 * slot);
      control[slotWord(slot, START)] = begin;
      control[slotWord(slot, END)] = end;
      control[slotWord(slot, FROM)] = job.from;
      control[slotWord(slot, ORDER)] = order;
      Atomics.store(control, slotWord(slot, STATE), PENDING);
      Atomics.add(control, WAKE, 1);
      Atomics.notify(control, WAKE);
      // Two blocks waiting: the worker is busy, so this thread checks the older one.
      const waiting = pendingSlots();
      if (waiting.length >= 2 && Atomics.compareExchange(control, slotWord(waiting[0]!.slot, STATE), PENDING, MINE) === PENDING) {
        runHere(waiting[0]!.slot);
      }
    },
    free(slot) {
      const job = jobs[slot];
      if (!job) return;
      if (job.order >= delivered && !done.has(job.order)) return settle(slot);
      if (alone) return;
      // Answered; the worker may still be about to mark it done.
      Atomics.wait(control, slotWord(slot, STATE), TAKEN, waitLimit);
      Atomics.store(control, slotWord(slot, STATE), FREE);
    },
    next(wait) {
      if (delivered === submitted) return null;
      receive();
      let chunk = done.get(delivered);
      if (!chunk && wait) {
        const slot = jobs.findIndex((job) => job?.order === delivered);
        if (slot >= 0) settle(slot);
        chunk = done.get(delivered);
      }
      if (!chunk) return null;
      done.delete(delivered++);
      return chunk;
    },
    ready() {
      start();
      Atomics.wait(control, READY, 0, waitLimit);
    },
    taken(slot) {
      Atomics.wait(control, slotWord(slot, STATE), PENDING, waitLimit);
    },
    lockSignatures(list) {
      if (alone || list.length === 0) return;
      start();
      port1.postMessage({ locks: [...list] } satisfies ToWorker);
      Atomics.store(control, LOCKS, PENDING);
      Atomics.add(control, WAKE, 1);
      Atomics.notify(control, WAKE);
    },
    lockSignatureAnswers() {
      if (alone || Atomics.compareExchange(control, LOCKS, PENDING, MINE) === PENDING) return null;
      if (Atomics.load(control, LOCKS) === TAKEN) Atomics.wait(control, LOCKS, TAKEN, waitLimit);
      receive();
      return lockAnswers;
    },
    close() {
      stopWorker();
      port1.close();
    },
  };
}
