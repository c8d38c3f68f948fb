// Hashes a bundle's frames on a second thread while the main thread checks everything else.
// It parses the manifest itself from the shared file bytes, so nothing large is copied.
import { workerData } from "node:worker_threads";
import { fromUtf8, hashFrames, splitBundle, type HashedFrame } from "../../../protocol/index.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { DONE, FAILED, type HashJob } from "./parallel.ts";

const job = workerData as HashJob;
const control = new Int32Array(job.control);
try {
  useNodeCrypto();
  const split = splitBundle(fromUtf8(new Uint8Array(job.file)));
  if (!split.ok) throw new Error(split.message);
  const manifest = JSON.parse(split.manifestText) as { run: { id: string }; frames: HashedFrame[] };
  const frames = manifest.frames;
  const out = new Uint8Array(job.hashes);
  if (!Array.isArray(frames) || frames.length * 32 > out.length) throw new Error("unexpected frames");
  const hashes = hashFrames(manifest.run.id, frames);
  hashes.forEach((h, i) => out.set(h, i * 32));
  control[1] = frames.length;
  Atomics.store(control, 0, DONE);
} catch {
  Atomics.store(control, 0, FAILED);
}
Atomics.notify(control, 0);
