import { Worker } from "node:worker_threads";
import type { HashedFrame } from "../../../protocol/index.ts";

export const DONE = 1;
export const FAILED = 2;

/** What the hash worker is handed: the file, room for the hashes, and a control word. */
export interface HashJob {
  file: SharedArrayBuffer;
  hashes: SharedArrayBuffer;
  control: SharedArrayBuffer;
}

/** Below this size one thread is faster than starting a second. */
const PARALLEL_MIN_BYTES = 2 * 1024 * 1024;

/**
 * Starts hashing a bundle's frames on a worker thread and returns the `frameHashes` option for
 * verifyBundle, which blocks (Atomics.wait) until the worker is done. The worker's hashes come from
 * the same `hashFrames`; if it fails, verification computes them itself.
 */
export function startFrameHashing(bytes: Uint8Array): { file: Uint8Array; frameHashes?: (chainId: string, frames: readonly HashedFrame[]) => Uint8Array[] | null; stop: () => void } {
  if (bytes.length < PARALLEL_MIN_BYTES) return { file: bytes, stop: () => {} };
  const shared = new SharedArrayBuffer(bytes.length);
  const file = new Uint8Array(shared);
  file.set(bytes);
  // A frame takes at least ~60 bytes in a bundle, which bounds how many hashes there can be.
  const hashes = new SharedArrayBuffer(Math.ceil(bytes.length / 60) * 32);
  const control = new SharedArrayBuffer(8);
  const job: HashJob = { file: shared, hashes, control };
  const worker = new Worker(new URL("./hash-worker.ts", import.meta.url), { workerData: job });
  worker.on("error", () => {
    const c = new Int32Array(control);
    Atomics.store(c, 0, FAILED);
    Atomics.notify(c, 0);
  });
  const frameHashes = (_chainId: string, frames: readonly HashedFrame[]) => {
    const c = new Int32Array(control);
    Atomics.wait(c, 0, 0);
    if (Atomics.load(c, 0) !== DONE || c[1] !== frames.length) return null;
    const all = new Uint8Array(hashes);
    return frames.map((_, i) => all.slice(i * 32, i * 32 + 32));
  };
  return { file, frameHashes, stop: () => void worker.terminate() };
}
