// npm run bench:verify — `oxagen verify` on a version-2 bundle against the floor of
// verify-floor.ts (the least any verifier of the format must do), on one thread and on two, each
// pair measured alternately in the same run. RESULT ratio = floor time / verify time, the lower of
// the two thread counts. The peak RSS is the real command's (`oxagen verify` in a child process).
//
//   BENCH_FRAMES  frames in the generated bundle (default 100,000)
//   BENCH_ROUNDS  rounds of each measurement, medians reported (default 5)
//   BENCH_FILE    verify this bundle instead (e.g. an export of a long run), with
//   BENCH_KEY     its server key (64 hex)
import { spawnSync } from "node:child_process";
import { closeSync, fstatSync, openSync, readSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { bytesToHex, fromHex, localChecker, verifySource } from "../../protocol/index.ts";
import { parallelChecker } from "../../collector/commands/verify/parallel.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import { SERVER_PUBLIC } from "../../test/support/sample-run.ts";
import { writeSampleBundle } from "./sample-bundle.ts";
import { floor } from "./verify-floor.ts";

const FRAMES = Number(process.env.BENCH_FRAMES ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

useNodeCrypto();
let path = process.env.BENCH_FILE;
const serverKey = process.env.BENCH_KEY ? fromHex(process.env.BENCH_KEY, 32) : SERVER_PUBLIC;
const generated = !path;
if (!path) {
  path = join(tmpdir(), `oxagen-bench-${process.pid}.jsonl`);
  const t0 = performance.now();
  await writeSampleBundle(path, FRAMES);
  console.log(`wrote ${path} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
const file = path;

function verifyOnce(threads: 1 | 2): { ms: number; frames: number } {
  const fd = openSync(file, "r");
  const size = fstatSync(fd).size;
  const source = {
    size,
    read: (into: Uint8Array, at: number, length: number, position: number) => readSync(fd, into, at, length, position),
  };
  const start = performance.now();
  const checker = threads === 1 ? { ...localChecker(size, (n) => Buffer.alloc(n)), close: () => {} } : parallelChecker();
  const result = verifySource(source, { serverKey }, checker);
  const ms = performance.now() - start;
  checker.close();
  closeSync(fd);
  if (result.exit !== 0 && result.exit !== 3) throw new Error(`the bundle did not verify: ${JSON.stringify(result.findings.slice(0, 3))}`);
  return { ms, frames: result.summary.frames };
}

function floorOnce(threads: 1 | 2): number {
  const start = performance.now();
  const bad = floor(file, serverKey, threads);
  const ms = performance.now() - start;
  if (bad !== 0) throw new Error(`the floor found ${bad} frames or signatures that do not check out`);
  return ms;
}

// The real command in its own process, for its peak resident memory (both threads included).
function commandRss(): { exit: number; maxRssMb: number; ms: number } {
  const args = [join(import.meta.dirname, "command-rss.ts"), "verify", file, "--server-key", bytesToHex(serverKey), "--json"];
  const start = performance.now();
  const r = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 30 });
  const ms = performance.now() - start;
  const out = JSON.parse(r.stderr.slice(r.stderr.lastIndexOf("\n") + 1)) as { exit: number; maxRss: number };
  return { exit: out.exit, maxRssMb: out.maxRss / 1024, ms };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const times = { 1: { verify: [] as number[], floor: [] as number[] }, 2: { verify: [] as number[], floor: [] as number[] } };
let frames = 0;
for (let round = 0; round < ROUNDS; round++) {
  for (const threads of [1, 2] as const) {
    // Alternate which goes first, so neither always runs on a warmer machine.
    const pair = round % 2 === 0 ? ["floor", "verify"] : ["verify", "floor"];
    for (const what of pair) {
      if (what === "floor") times[threads].floor.push(floorOnce(threads));
      else {
        const v = verifyOnce(threads);
        frames = v.frames;
        times[threads].verify.push(v.ms);
      }
    }
  }
}
const rss = commandRss();
const size = statSync(file).size;
if (generated) rmSync(file);

const rows: [string, string][] = [
  ["frames", String(frames)],
  ["bundle bytes", String(size)],
  ["rounds (medians below)", String(ROUNDS)],
];
const ratios: Record<string, number> = {};
for (const threads of [1, 2] as const) {
  const v = median(times[threads].verify);
  const f = median(times[threads].floor);
  ratios[threads] = f / v;
  rows.push(
    [`${threads} thread${threads > 1 ? "s" : ""}: verify (ms)`, v.toFixed(0)],
    [`${threads} thread${threads > 1 ? "s" : ""}: floor (ms)`, f.toFixed(0)],
    [`${threads} thread${threads > 1 ? "s" : ""}: verify (frames/s)`, Math.round((frames / v) * 1000).toString()],
    [`${threads} thread${threads > 1 ? "s" : ""}: floor (frames/s)`, Math.round((frames / f) * 1000).toString()],
    [`${threads} thread${threads > 1 ? "s" : ""}: ratio floor/verify`, ratios[threads]!.toFixed(3)],
  );
}
rows.push(
  ["oxagen verify (child process): exit", String(rss.exit)],
  ["oxagen verify (child process): wall (ms)", rss.ms.toFixed(0)],
  ["oxagen verify (child process): peak RSS (MB)", rss.maxRssMb.toFixed(0)],
);
const width = Math.max(...rows.map(([k]) => k.length));
for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
const value = Math.round((frames / median(times[2].verify)) * 1000);
const floorRate = Math.round((frames / median(times[2].floor)) * 1000);
console.log(
  `RESULT ${JSON.stringify({
    name: "verify",
    value,
    unit: "frames/s",
    floor: floorRate,
    ratio: Number(Math.min(ratios[1]!, ratios[2]!).toFixed(3)),
    ratio_1_thread: Number(ratios[1]!.toFixed(3)),
    ratio_2_threads: Number(ratios[2]!.toFixed(3)),
    peak_rss_mb: Math.round(rss.maxRssMb),
  })}`,
);
