import { Worker } from "node:worker_threads";
import type { HashedFrame, SignedLock } from "../../../protocol/index.ts";

export const DONE = 1;
export const FAILED = 2;

/** Control words: the frame hashes' state and count, then the lock signatures' state and count. */
export const HASHES = 0;
export const SIGNATURES = 2;

/** What the hash worker is handed: the file, room for its answers, a control block, the pinned server key. */
export interface HashJob {
  file: SharedArrayBuffer;
  hashes: SharedArrayBuffer;
  signatures: SharedArrayBuffer;
  control: SharedArrayBuffer;
  serverKey: Uint8Array;
}

/** How long the main thread waits for one of the worker's answers before doing the work itself. */
const WAIT_LIMIT_MS = 30_000;

/** Below this size one thread is faster than starting a second. */
const PARALLEL_MIN_BYTES = 2 * 1024 * 1024;

/**
 * Starts a worker thread that hashes a bundle's frames and then checks its lock signatures, and
 * returns the `frameHashes` and `lockSignatures` options for verifyBundle, which block
 * (Atomics.wait) until the worker has each answer. The worker's answers come from the same
 * `hashFrames` and `lockSignatureValid`; where it fails, verification computes them itself.
 */
export function startFrameHashing(
  bytes: Uint8Array,
  serverKey: Uint8Array,
): {
  file: Uint8Array;
  frameHashes?: (chainId: string, frames: readonly HashedFrame[]) => Uint8Array[] | null;
  lockSignatures?: (locks: readonly SignedLock[]) => boolean[] | null;
  stop: () => void;
} {
  if (bytes.length < PARALLEL_MIN_BYTES) return { file: bytes, stop: () => {} };
  const shared = new SharedArrayBuffer(bytes.length);
  const file = new Uint8Array(shared);
  file.set(bytes);
  // A frame holds a 64-hex hash and a lock a 128-hex signature: that bounds how many answers there are.
  const hashes = new SharedArrayBuffer(Math.ceil(bytes.length / 64) * 32);
  const signatures = new SharedArrayBuffer(Math.ceil(bytes.length / 128));
  const control = new SharedArrayBuffer(16);
  const c = new Int32Array(control);
  const job: HashJob = { file: shared, hashes, signatures, control, serverKey };
  const worker = new Worker(new URL("./hash-worker.ts", import.meta.url), { workerData: job });
  worker.on("error", () => {
    for (const at of [HASHES, SIGNATURES]) {
      Atomics.compareExchange(c, at, 0, FAILED);
      Atomics.notify(c, at);
    }
  });
  // Waits for one answer; its count must be the one asked for.
  // Bounded: a worker that dies before answering cannot mark itself failed while this thread waits
  // (its error event needs this thread's event loop), so verification then does the work itself.
  const ready = (at: number, count: number) => {
    Atomics.wait(c, at, 0, WAIT_LIMIT_MS);
    return Atomics.load(c, at) === DONE && c[at + 1] === count;
  };
  const frameHashes = (_chainId: string, frames: readonly HashedFrame[]) => {
    if (!ready(HASHES, frames.length)) return null;
    // Views, not copies: the worker has finished writing them, and nothing writes them again.
    const all = new Uint8Array(hashes);
    return frames.map((_, i) => all.subarray(i * 32, i * 32 + 32));
  };
  const lockSignatures = (locks: readonly SignedLock[]) => {
    if (!ready(SIGNATURES, locks.length)) return null;
    const all = new Uint8Array(signatures);
    return locks.map((_, i) => all[i] === 1);
  };
  return { file, frameHashes, lockSignatures, stop: () => void worker.terminate() };
}
