// Hashes a bundle's frames, then checks its lock signatures, on a second thread while the main
// thread checks everything else. It parses the manifest itself from the shared file bytes, so
// nothing large is copied. Each answer is published (or marked failed) as soon as it is known.
import { workerData } from "node:worker_threads";
// Only the modules it needs (no schemas), to start fast.
import { fromHex, fromUtf8 } from "../../../protocol/bytes.ts";
import { splitBundle } from "../../../protocol/bundle-layout.ts";
import { hashFrames, type HashedFrame } from "../../../protocol/frame-hash.ts";
import { lockSignatureValid } from "../../../protocol/lock-signature.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { DONE, FAILED, HASHES, SIGNATURES, type HashJob } from "./parallel.ts";

const job = workerData as HashJob;
const control = new Int32Array(job.control);

function answer(at: number, work: () => number): void {
  try {
    control[at + 1] = work();
    Atomics.store(control, at, DONE);
  } catch {
    Atomics.store(control, at, FAILED);
  }
  Atomics.notify(control, at);
}

let manifest: { run: { id: string }; host_key: { pub: string }; frames: HashedFrame[]; locks: { payload: string; sig: string }[] } | null = null;
try {
  useNodeCrypto();
  const split = splitBundle(fromUtf8(new Uint8Array(job.file)));
  if (split.ok) manifest = JSON.parse(split.manifestText);
} catch {
  manifest = null;
}

answer(HASHES, () => {
  const frames = manifest!.frames;
  const out = new Uint8Array(job.hashes);
  if (!Array.isArray(frames) || frames.length * 32 > out.length) throw new Error("unexpected frames");
  hashFrames(manifest!.run.id, frames).forEach((h, i) => out.set(h, i * 32));
  return frames.length;
});

// Each lock under the key of the signer its payload names, as verifyLocks chooses it.
answer(SIGNATURES, () => {
  const locks = manifest!.locks;
  const out = new Uint8Array(job.signatures);
  if (!Array.isArray(locks) || locks.length > out.length) throw new Error("unexpected locks");
  const hostKey = fromHex(manifest!.host_key.pub, 32);
  locks.forEach((lock, i) => {
    const signer = signerOf(lock.payload);
    const key = signer === "host" ? hostKey : signer === "server" ? job.serverKey : null;
    out[i] = key && lockSignatureValid(lock, key) ? 1 : 0;
  });
  return locks.length;
});

function signerOf(payload: string): unknown {
  try {
    return (JSON.parse(payload) as { signer?: unknown } | null)?.signer;
  } catch {
    return null;
  }
}
