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

type Job = FrameLinesJob & { start: number; end: number; order: number };

/**
 * A {@link FrameChecker} that shares the frame lines with a second thread: each block's lines go
 * to whichever thread is free first (this one takes a block whenever two are waiting), and the
 * lock signatures go to the worker first. Whatever the worker does not deliver, this thread
 * checks itself, so a worker that dies or stalls changes nothing but the time taken.
 */
export class ParallelChecker implements FrameChecker {
  readonly slots: Buffer[];
  /** Blocks of frame lines checked by each thread. */
  readonly checked = { here: 0, worker: 0 };
  readonly #waitLimit: number;
  readonly #control: Int32Array;
  readonly #prevs: Uint8Array;
  readonly #port: MessagePort;
  readonly #setup: CheckerSetup;
  // Started with the first job: a version-1 bundle never gives it one.
  #worker: Worker | null = null;
  readonly #jobs: Job[] = [];
  readonly #done = new Map<number, FrameChunk>();
  #submitted = 0;
  #delivered = 0;
  #configured = false;
  #lockAnswers: boolean[] | null = null;
  // A worker that does not answer in time is given up on: from then on this thread checks
  // everything, and the state words (which the worker may still write) are no longer read.
  #alone = false;

  constructor(options: ParallelOptions = {}) {
    this.#waitLimit = options.waitLimitMs ?? WAIT_LIMIT_MS;
    const buffers = Array.from({ length: SLOT_COUNT }, () => new SharedArrayBuffer(SLOT_BYTES));
    // Buffers, not plain Uint8Arrays: the reader finds line ends with Buffer's native indexOf.
    this.slots = buffers.map((b) => Buffer.from(b));
    this.#control = new Int32Array(new SharedArrayBuffer(4 * (HEADER_WORDS + SLOT_COUNT * SLOT_WORDS)));
    this.#prevs = new Uint8Array(new SharedArrayBuffer(32 * SLOT_COUNT));
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    this.#setup = {
      slots: buffers,
      control: this.#control.buffer as SharedArrayBuffer,
      prevs: this.#prevs.buffer as SharedArrayBuffer,
      port: port2,
    };
  }

  start(): void {
    if (this.#worker) return;
    this.#worker = new Worker(new URL("./worker.ts", import.meta.url), {
      workerData: this.#setup,
      transferList: [this.#setup.port],
      resourceLimits: WORKER_LIMITS,
    });
    this.#worker.unref();
  }

  submit(slot: number, begin: number, end: number, job: FrameLinesJob): void {
    const order = this.#submitted++;
    this.#jobs[slot] = { ...job, start: begin, end, order };
    if (this.#alone) {
      this.#runHere(slot);
      return;
    }
    this.start();
    if (!this.#configured) {
      this.#port.postMessage({ chainId: job.chainId, bodies: job.bodies } satisfies ToWorker);
      this.#configured = true;
    }
    const control = this.#control;
    this.#prevs.set(job.prev, 32 * slot);
    control[slotWord(slot, START)] = begin;
    control[slotWord(slot, END)] = end;
    control[slotWord(slot, FROM)] = job.from;
    control[slotWord(slot, ORDER)] = order;
    Atomics.store(control, slotWord(slot, STATE), PENDING);
    this.#wake();
    // Two blocks waiting: the worker is busy, so this thread checks the older one.
    const waiting = this.#pendingSlots();
    if (waiting.length >= 2 && this.#take(waiting[0]!)) this.#runHere(waiting[0]!);
  }

  free(slot: number): void {
    const job = this.#jobs[slot];
    if (!job) return;
    if (job.order >= this.#delivered && !this.#done.has(job.order)) {
      this.#settle(slot);
      return;
    }
    if (this.#alone) return;
    // Answered; the worker may still be about to mark it done.
    Atomics.wait(this.#control, slotWord(slot, STATE), TAKEN, this.#waitLimit);
    Atomics.store(this.#control, slotWord(slot, STATE), FREE);
  }

  next(wait: boolean): FrameChunk | null {
    if (this.#delivered === this.#submitted) return null;
    this.#receive();
    let chunk = this.#done.get(this.#delivered);
    if (!chunk && wait) {
      const slot = this.#jobs.findIndex((job) => job?.order === this.#delivered);
      if (slot >= 0) this.#settle(slot);
      chunk = this.#done.get(this.#delivered);
    }
    if (!chunk) return null;
    this.#done.delete(this.#delivered++);
    return chunk;
  }

  /** Starts the worker now and returns once it waits for work (tests use it to be sure it takes some). */
  ready(): void {
    this.start();
    Atomics.wait(this.#control, READY, 0, this.#waitLimit);
  }

  /** Returns once slot `slot`'s block is no longer waiting to be taken. */
  taken(slot: number): void {
    Atomics.wait(this.#control, slotWord(slot, STATE), PENDING, this.#waitLimit);
  }

  lockSignatures(list: readonly LockSignatureJob[]): void {
    if (this.#alone || list.length === 0) return;
    this.start();
    this.#port.postMessage({ locks: [...list] } satisfies ToWorker);
    Atomics.store(this.#control, LOCKS, PENDING);
    this.#wake();
  }

  lockSignatureAnswers(): boolean[] | null {
    const control = this.#control;
    if (this.#alone || Atomics.compareExchange(control, LOCKS, PENDING, MINE) === PENDING) return null;
    if (Atomics.load(control, LOCKS) === TAKEN) Atomics.wait(control, LOCKS, TAKEN, this.#waitLimit);
    this.#receive();
    return this.#lockAnswers;
  }

  close(): void {
    this.#stopWorker();
    this.#port.close();
  }

  #wake(): void {
    Atomics.add(this.#control, WAKE, 1);
    Atomics.notify(this.#control, WAKE);
  }

  #stopWorker(): void {
    Atomics.store(this.#control, STOP, 1);
    this.#wake();
    void this.#worker?.terminate();
  }

  #state(slot: number): number {
    return Atomics.load(this.#control, slotWord(slot, STATE));
  }

  /** Takes a waiting block for this thread; false when the worker took it first. */
  #take(slot: number): boolean {
    return Atomics.compareExchange(this.#control, slotWord(slot, STATE), PENDING, MINE) === PENDING;
  }

  #receive(): void {
    for (let m = receiveMessageOnPort(this.#port); m; m = receiveMessageOnPort(this.#port)) {
      const message = m.message as FromWorker;
      if ("locks" in message) this.#lockAnswers = message.locks;
      else if (!this.#done.has(message.order)) {
        this.#done.set(message.order, message.chunk);
        this.checked.worker++;
      }
    }
  }

  #runHere(slot: number): void {
    const job = this.#jobs[slot]!;
    if (!this.#done.has(job.order)) {
      this.#done.set(job.order, checkFrameLines(this.slots[slot]!, job.start, job.end, job));
      this.checked.here++;
    }
    if (!this.#alone) Atomics.store(this.#control, slotWord(slot, STATE), FREE);
  }

  // Makes sure a slot's job is answered: takes it if nobody has; if the worker has it, checks
  // the blocks still waiting here first, then waits for the worker.
  #settle(slot: number): void {
    for (;;) {
      if (this.#alone || this.#take(slot)) {
        this.#runHere(slot);
        return;
      }
      const s = this.#state(slot);
      if (s === FREE) return;
      if (s === DONE) {
        this.#receive();
        this.#runHere(slot);
        return;
      }
      const other = this.#pendingSlots()[0];
      if (other !== undefined && this.#take(other)) {
        this.#runHere(other);
        continue;
      }
      if (Atomics.wait(this.#control, slotWord(slot, STATE), TAKEN, this.#waitLimit) === "timed-out") {
        this.#alone = true;
        this.#stopWorker();
      }
    }
  }

  /** The slots whose blocks wait to be taken, oldest first. */
  #pendingSlots(): number[] {
    if (this.#alone) return [];
    const waiting: number[] = [];
    for (let slot = 0; slot < this.#jobs.length; slot++) if (this.#jobs[slot] && this.#state(slot) === PENDING) waiting.push(slot);
    return waiting.sort((a, b) => this.#jobs[a]!.order - this.#jobs[b]!.order);
  }
}

/** A {@link ParallelChecker} (the defaults are what `oxagen verify` uses). */
export function parallelChecker(options: ParallelOptions = {}): ParallelChecker {
  return new ParallelChecker(options);
}
