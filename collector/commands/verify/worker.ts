// The second thread of `oxagen verify` (see parallel.ts): checks the server signature, waits for
// the frames, checks the lock signatures unless the main thread has, then takes chunks of frames
// until none is left.
import { receiveMessageOnPort, workerData } from "node:worker_threads";
// Only the modules it needs (no schemas), to start fast.
import { fromHex } from "../../../protocol/bytes.ts";
import { bundleSignatureValid, splitBundle } from "../../../protocol/bundle-layout.ts";
import { checkFrameSlice } from "../../../protocol/frame-check.ts";
import type { HashedFrame } from "../../../protocol/frame-hash.ts";
import { lockSignatureValid } from "../../../protocol/lock-signature.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { ANSWERED, BUSY, CHUNK, type CheckJob, FAILED, HANDOVER, type Handover, JOBS, NEXT_CHUNK, OPEN, TAKEN } from "./parallel.ts";

const job = workerData as CheckJob;
const control = new Int32Array(job.control);

function take(at: number, work: () => number): void {
  if (Atomics.compareExchange(control, at, OPEN, TAKEN) !== OPEN) return;
  try {
    control[at + 1] = work();
    Atomics.store(control, at, ANSWERED);
  } catch {
    Atomics.store(control, at, FAILED);
  }
  Atomics.notify(control, at);
}

useNodeCrypto();
take(JOBS.bundleSignature, () => {
  const bytes = new Uint8Array(job.file);
  // The layout around the manifest is ASCII, so the manifest's bytes are found from the file's
  // two ends alone (a character cut in two there decodes to U+FFFD, outside the layout).
  const decoder = new TextDecoder();
  const split = splitBundle(decoder.decode(bytes.subarray(0, 200)) + decoder.decode(bytes.subarray(Math.max(200, bytes.length - 300))));
  if (!split.ok) throw new Error("not a bundle");
  return bundleSignatureValid(bytes.subarray(split.start, bytes.length - split.suffixLength), split.sig, job.serverKey) ? 1 : 0;
});

Atomics.wait(control, HANDOVER, 0);
const h = Atomics.load(control, HANDOVER) === 1 ? (receiveMessageOnPort(job.port)?.message as Handover | undefined) : undefined;

if (h) {
  // Each lock under the key of the signer its payload names, as verifyLocks chooses it.
  take(JOBS.lockSignatures, () => {
    const hostKey = fromHex(h.hostKey, 32);
    h.locks.forEach((lock, i) => {
      const signer = signerOf(lock.payload);
      const key = signer === "host" ? hostKey : signer === "server" ? job.serverKey : null;
      h.signatures[i] = key && lockSignatureValid(lock, key) ? 1 : 0;
    });
    return h.locks.length;
  });

  takeChunks(h);
}
Atomics.store(control, BUSY, 0);
Atomics.notify(control, BUSY);

// BUSY is raised before each claim, so once every chunk is claimed the main thread knows whether
// a chunk of this thread's is still on its way. (A function, not module code: V8 optimizes it.)
function takeChunks(h: Handover): void {
  try {
    const decoder = new TextDecoder();
    const chunks = Math.ceil(h.count / CHUNK);
    for (;;) {
      Atomics.store(control, BUSY, 1);
      const n = Atomics.add(control, NEXT_CHUNK, 1);
      if (n >= chunks) break;
      const from = n * CHUNK;
      const to = Math.min(h.count, from + CHUNK);
      // checkFrameSlice reads frames by position: only this chunk's (and the one before) are filled in.
      const frames: HashedFrame[] = new Array(to);
      for (let i = from - (from > 0 ? 1 : 0); i < to; i++) frames[i] = frameAt(h, i, decoder);
      job.port.postMessage(checkFrameSlice(h.chainId, frames, from, to));
      Atomics.store(control, BUSY, 0);
      Atomics.notify(control, BUSY);
    }
  } catch {
    // A chunk this thread claimed and did not deliver is checked by the main thread.
  }
}

function frameAt(h: Handover, i: number, decoder: TextDecoder): HashedFrame {
  return {
    seq: h.seqs[i]!,
    t: h.times[i]!,
    kind: h.kinds[h.kindOf[i]!]!,
    payload: decoder.decode(h.payloads.subarray(h.offsets[i]!, h.offsets[i + 1]!)),
    hash: decoder.decode(h.hashes.subarray(64 * i, 64 * i + 64)),
  };
}

function signerOf(payload: string): unknown {
  try {
    return (JSON.parse(payload) as { signer?: unknown } | null)?.signer;
  } catch {
    return null;
  }
}
