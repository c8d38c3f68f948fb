import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import type { FrameSlice, HashedFrame, Manifest, SignedLock, VerifyOptions } from "../../../protocol/index.ts";

/** Frames are shared out between the threads this many at a time. */
export const CHUNK = 2048;

/**
 * Control words (Int32): whether the frames have been handed over (1) or will not be (2); the
 * next chunk to claim and whether the worker is checking one; then a state word and an answer
 * word for each whole-bundle job, which goes to whichever thread takes it first.
 */
export const HANDOVER = 0;
export const NEXT_CHUNK = 1;
export const BUSY = 2;
export const JOBS = { lockSignatures: 4, bundleSignature: 6 } as const;
const CONTROL_WORDS = 8;

/** A job's state: nobody has it, the worker has it, answered (the answer word is set), failed, the main thread has it. */
export const OPEN = 0;
export const TAKEN = 1;
export const ANSWERED = 2;
export const FAILED = 3;
const MINE = 4;

/** What the worker is handed when it starts: the file, the control block, the pinned server key, a port. */
export interface CheckJob {
  file: SharedArrayBuffer;
  control: SharedArrayBuffer;
  serverKey: Uint8Array;
  port: MessagePort;
}

/**
 * The frames and locks, handed to the worker once the manifest is parsed: each frame's seq and
 * time, its kind (an index into `kinds`), its claimed hash (64 hex characters, ASCII) and its
 * payload's UTF-8 bytes (frame i's are `payloads[offsets[i] … offsets[i+1]]`).
 */
export interface Handover {
  chainId: string;
  count: number;
  kinds: string[];
  kindOf: Int32Array;
  times: Float64Array;
  seqs: Float64Array;
  hashes: Uint8Array;
  offsets: Int32Array;
  payloads: Uint8Array;
  hostKey: string;
  locks: SignedLock[];
  signatures: Uint8Array;
}

/** How long the main thread waits for one of the worker's answers before doing the work itself. */
const WAIT_LIMIT_MS = 30_000;

/** Below this size one thread is faster than starting a second. */
const PARALLEL_MIN_BYTES = 2 * 1024 * 1024;

/** The verifyBundle options {@link startParallelVerify} fills in, and how to stop the worker. */
export interface ParallelVerify {
  options: Pick<VerifyOptions, "shareFrames" | "lockSignatures" | "bundleSignature">;
  stop: () => void;
}

/**
 * Starts a worker thread that shares `oxagen verify`'s work: it checks the server signature at
 * once, and once the main thread has parsed the manifest and handed it the frames, it checks the
 * lock signatures and then takes chunks of frames, as the main thread does when it is free, so
 * both finish together. The worker's answers come from the same protocol functions; whatever it
 * does not deliver, verification does itself.
 */
export function startParallelVerify(bytes: Uint8Array, serverKey: Uint8Array): ParallelVerify {
  if (bytes.length < PARALLEL_MIN_BYTES) return { options: {}, stop: () => {} };
  let shared = bytes.buffer;
  if (!(shared instanceof SharedArrayBuffer) || bytes.byteOffset !== 0 || bytes.byteLength !== shared.byteLength) {
    shared = new SharedArrayBuffer(bytes.length);
    new Uint8Array(shared).set(bytes);
  }
  const control = new SharedArrayBuffer(4 * CONTROL_WORDS);
  const c = new Int32Array(control);
  const { port1, port2 } = new MessageChannel();
  const job: CheckJob = { file: shared, control, serverKey, port: port2 };
  const worker = new Worker(new URL("./worker.ts", import.meta.url), { workerData: job, transferList: [port2] });
  worker.on("error", () => {
    for (const at of Object.values(JOBS)) {
      Atomics.compareExchange(c, at, TAKEN, FAILED);
      Atomics.notify(c, at);
    }
  });
  let handover: Handover | null = null;

  // The worker's answer to a job: null when this thread should do it (it took the job first, or
  // the worker failed). Bounded: a worker that dies mid-job cannot mark it failed while this
  // thread waits (its error event needs this thread's event loop).
  const answer = (at: number): number | null => {
    if (Atomics.compareExchange(c, at, OPEN, MINE) === OPEN) return null;
    Atomics.wait(c, at, TAKEN, WAIT_LIMIT_MS);
    return Atomics.load(c, at) === ANSWERED ? c[at + 1]! : null;
  };

  const collect = (count: number) => (check: (from: number, to: number) => FrameSlice) => {
    const chunks = Math.ceil(count / CHUNK);
    const slices: FrameSlice[] = [];
    for (let n = Atomics.add(c, NEXT_CHUNK, 1); n < chunks; n = Atomics.add(c, NEXT_CHUNK, 1)) {
      slices.push(check(n * CHUNK, Math.min(count, (n + 1) * CHUNK)));
    }
    // Every chunk is claimed; the worker may still be checking its last one. A worker that died
    // mid-chunk never clears BUSY: verification then checks that chunk itself.
    const deadline = Date.now() + WAIT_LIMIT_MS;
    while (Atomics.load(c, BUSY) !== 0 && Date.now() < deadline) Atomics.wait(c, BUSY, 1, 100);
    for (let m = receiveMessageOnPort(port1); m; m = receiveMessageOnPort(port1)) slices.push(m.message as FrameSlice);
    return slices;
  };
  const shareFrames = (manifest: Manifest) => {
    handover = handOver(manifest, bytes.length);
    if (handover) port1.postMessage(handover);
    Atomics.store(c, HANDOVER, handover ? 1 : 2);
    Atomics.notify(c, HANDOVER);
    return collect(manifest.frames.length);
  };
  const lockSignatures = (locks: readonly SignedLock[]) => {
    if (!handover || answer(JOBS.lockSignatures) !== locks.length) return null;
    const valid = handover.signatures;
    return locks.map((_, i) => valid[i] === 1);
  };
  const bundleSignature = () => {
    const a = answer(JOBS.bundleSignature);
    return a === null ? null : a === 1;
  };
  return {
    options: { shareFrames, lockSignatures, bundleSignature },
    stop: () => {
      Atomics.compareExchange(c, HANDOVER, 0, 2);
      Atomics.notify(c, HANDOVER);
      port1.close();
      void worker.terminate();
    },
  };
}

// Lays the frames out in shared memory. A payload or kind that has no UTF-8 form (a lone
// surrogate) would not survive the trip, so such a bundle is not shared: this thread checks it.
function handOver(m: Manifest, bound: number): Handover | null {
  const count = m.frames.length;
  const sab = (bytes: number) => new SharedArrayBuffer(Math.max(8, bytes));
  const h: Handover = {
    chainId: m.run.id,
    count,
    kinds: [],
    kindOf: new Int32Array(sab(4 * count)),
    times: new Float64Array(sab(8 * count)),
    seqs: new Float64Array(sab(8 * count)),
    hashes: new Uint8Array(sab(64 * count)),
    offsets: new Int32Array(sab(4 * (count + 1))),
    // A payload's UTF-8 bytes are never more than its escaped text in the file.
    payloads: new Uint8Array(sab(bound)),
    hostKey: m.host_key.pub,
    locks: m.locks,
    signatures: new Uint8Array(sab(m.locks.length)),
  };
  const kindIndex = new Map<string, number>();
  const payloads = Buffer.from(h.payloads.buffer);
  const hashes = Buffer.from(h.hashes.buffer);
  let at = 0;
  for (let i = 0; i < count; i++) {
    const f: unknown = m.frames[i];
    if (!isFrame(f) || !f.payload.isWellFormed() || !f.kind.isWellFormed()) return null;
    let k = kindIndex.get(f.kind);
    if (k === undefined) {
      k = h.kinds.push(f.kind) - 1;
      kindIndex.set(f.kind, k);
    }
    h.kindOf[i] = k;
    h.seqs[i] = f.seq;
    h.times[i] = f.t;
    hashes.write(f.hash, 64 * i, 64, "latin1");
    at += payloads.write(f.payload, at, "utf8");
    h.offsets[i + 1] = at;
  }
  return h;
}

// The types the handover relies on; verifyBundle checks the rest (and refuses the bundle) itself.
function isFrame(f: unknown): f is HashedFrame & { hash: string } {
  if (typeof f !== "object" || f === null) return false;
  const { seq, t, kind, payload, hash } = f as Record<string, unknown>;
  return (
    typeof seq === "number" &&
    typeof t === "number" &&
    typeof kind === "string" &&
    typeof payload === "string" &&
    typeof hash === "string" &&
    hash.length === 64
  );
}
