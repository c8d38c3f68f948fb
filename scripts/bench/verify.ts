// npm run bench:verify — verify a 100,000-frame bundle (a lock every 100 frames) and compare with
// the floor measured in the same run: node:crypto SHA-256 over the same payload bytes, one call
// per payload, in the fastest form node:crypto has (a "binary" digest string, about twice as fast
// as a Buffer digest, which the table also shows).
import { hash } from "node:crypto";
import { performance } from "node:perf_hooks";
import { verifyBundle } from "../../protocol/index.ts";
import { startParallelVerify } from "../../collector/commands/verify/parallel.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import { SERVER_PUBLIC, sampleRun } from "../../test/support/sample-run.ts";

const FRAMES = Number(process.env.BENCH_FRAMES ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

useNodeCrypto();
const t0 = performance.now();
const extra = Math.ceil((FRAMES - 6) / 4);
const run = sampleRun({ lockEvery: 100, extraToolCalls: extra });
const built = performance.now() - t0;
const frames = run.manifest.frames.length;
const bundle = Buffer.from(run.bundle);
const payloads = run.manifest.frames.map((f) => Buffer.from(f.payload));
const payloadBytes = payloads.reduce((n, p) => n + p.length, 0);

function floor(): number {
  const start = performance.now();
  let x = 0;
  for (const p of payloads) x ^= hash("sha256", p, "binary").charCodeAt(0);
  if (x === 256) console.log("");
  return performance.now() - start;
}

function bufferFloor(): number {
  const start = performance.now();
  let x = 0;
  for (const p of payloads) x ^= hash("sha256", p, "buffer")[0]!;
  if (x === 256) console.log("");
  return performance.now() - start;
}

function verifyOnce(twoThreads: boolean): number {
  const start = performance.now();
  const parallel = twoThreads ? startParallelVerify(bundle, SERVER_PUBLIC) : null;
  const result = verifyBundle(bundle, {
    serverKey: SERVER_PUBLIC,
    ...parallel?.options,
  });
  const ms = performance.now() - start;
  parallel?.stop();
  if (result.exit !== 0) throw new Error(`bench bundle did not verify: ${JSON.stringify(result.findings.slice(0, 3))}`);
  return ms;
}

const floorMs: number[] = [];
const bufferFloorMs: number[] = [];
const verifyMs: number[] = [];
const singleMs: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  floorMs.push(floor());
  bufferFloorMs.push(bufferFloor());
  verifyMs.push(verifyOnce(true));
  singleMs.push(verifyOnce(false));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const vMs = median(verifyMs);
const fMs = median(floorMs);
const value = Math.round(frames / (vMs / 1000));
const floorRate = Math.round(frames / (fMs / 1000));
const rows = [
  ["frames", String(frames)],
  ["locks", String(run.locks.length)],
  ["bundle bytes", String(bundle.length)],
  ["payload bytes", String(payloadBytes)],
  ["build (ms, once)", built.toFixed(0)],
  [`verify, as oxagen verify runs it (2 threads), median of ${ROUNDS} (ms)`, vMs.toFixed(1)],
  [`verify on one thread, median (ms)`, median(singleMs).toFixed(1)],
  [`floor: node:crypto SHA-256 of each payload, "binary" digest, median (ms)`, fMs.toFixed(1)],
  [`(the same with a Buffer digest, median (ms))`, median(bufferFloorMs).toFixed(1)],
  ["verify (frames/s)", String(value)],
  ["floor (frames/s)", String(floorRate)],
  ["ratio", (value / floorRate).toFixed(3)],
  ["(ratio to the Buffer-digest floor)", (vMs > 0 ? median(bufferFloorMs) / vMs : 0).toFixed(3)],
];
const width = Math.max(...rows.map(([k]) => k!.length));
for (const [k, v] of rows) console.log(`${k!.padEnd(width)}  ${v}`);
console.log(
  `RESULT ${JSON.stringify({ name: "verify", value, unit: "frames/s", floor: floorRate, ratio: Number((value / floorRate).toFixed(3)) })}`,
);
