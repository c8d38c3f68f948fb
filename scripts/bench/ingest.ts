// npm run bench:ingest — frames/s accepted by POST /v1/ingest under `wrangler dev` on loopback,
// (a) one run in batches of 500 frames, each with the lock a recorder sends with it, and (b) 50
// runs at once, against a floor measured alternately in the same run: the same batches, frames
// and locks, written into the same tables of a chain object with no auth, no checks, no hashing
// and no state (POST /v1/bench/floor). That route exists only in the test-only Worker of
// scripts/bench/worker/, which this runs; the production Worker has none. Every run starts from
// an empty state folder, deleted after.
//
//   BENCH_BATCHES       batches of the one run (default 20)
//   BENCH_MANY_BATCHES  batches of each of the 50 runs (default 2)
//   BENCH_ROUNDS        rounds of each measurement, medians reported (default 3)
import { hostFetch } from "./host-fetch.ts";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { bytesToHex, ChainWriter, type Frame, newSecretKey, publicKeyOf, runIdFor, type SignedLock } from "../../protocol/index.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import { devArgs, ensureDatabase, localUrl, ROOT, waitHealthy } from "../dev-setup.ts";

const BATCH = 500;
const ONE_RUN_BATCHES = Number(process.env.BENCH_BATCHES ?? 20);
const RUNS = 50;
const MANY_BATCHES = Number(process.env.BENCH_MANY_BATCHES ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONFIG = join(import.meta.dirname, "worker/wrangler.toml");

useNodeCrypto();

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

interface Part {
  chain: string;
  run: { harness: string; agent: null; session_id: string };
  frames: Frame[];
  locks: SignedLock[];
}

/** A run's batches as the recorder ships them: 500 frames, then the lock of the chain up to them. */
function batches(hostId: string, secret: Uint8Array, session: string, count: number): Part[] {
  const chain = runIdFor(hostId, "claude-code", session);
  const w = new ChainWriter(chain);
  const out: Part[] = [];
  let t = 1_767_225_600_000;
  for (let b = 0; b < count; b++) {
    const frames: Frame[] = [];
    for (let i = 0; i < BATCH; i++) {
      const seq = b * BATCH + i;
      t += 10;
      const { frame } =
        seq === 0
          ? w.append("agent_start", { path: "hook", harness: "claude-code", session_id: session }, t)
          : w.append(
              "tool_call",
              {
                path: "hook",
                tool_name: "Bash",
                tool_use_id: `call-${seq}`,
                status: "ok",
                exit_code: 0,
                duration_ms: 120,
                input: { sha256: "a".repeat(64), size: 42 },
                output: { sha256: "b".repeat(64), size: 900 },
              },
              t,
            );
      frames.push(frame);
    }
    const lock = w.lock({ secretKey: secret, hostId, t: t + 1 })!;
    out.push({ chain, run: { harness: "claude-code", agent: null, session_id: session }, frames, locks: [lock] });
  }
  return out;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};
const median = (xs: number[]) => pct(xs, 50);

const port = await freePort();
const url = localUrl(port);
const persist = mkdtempSync(join(tmpdir(), "oxagen-bench-ingest-"));
const state = ensureDatabase(persist, join(persist, "oxagen-dev.json"), CONFIG);
const key = bytesToHex(newSecretKey());
const child = spawn(process.execPath, devArgs(port, ["--config", CONFIG, "--persist-to", persist, "--var", `OXAGEN_SIGNING_KEY:${key}`]), {
  cwd: ROOT,
  stdio: ["ignore", "ignore", "inherit"],
});
try {
  await waitHealthy(url);
  const op = (path: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${state.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<Record<string, string>>);
  const enrollToken = (await op("/v1/enrollment-tokens", {})).token;
  const secret = newSecretKey();
  const enrolled = await fetch(`${url}/v1/enroll`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      token: enrollToken,
      public_key: bytesToHex(publicKeyOf(secret)),
      hostname: "bench",
      harnesses: ["claude-code"],
    }),
  });
  const hostId = ((await enrolled.json()) as { host_id: string }).host_id;

  const ingest = async (part: Part): Promise<number> => {
    const body = Buffer.from(JSON.stringify({ chains: [part] }));
    const start = performance.now();
    const res = await hostFetch(url, { id: hostId, secret }, "POST", "/v1/ingest", { "content-type": "application/json" }, body);
    const answer = (await res.json()) as { chains?: { stored: number; status: string; locks_stored: number }[] };
    const ack = answer.chains?.[0];
    if (res.status !== 200 || ack?.status !== "accepted" || ack.locks_stored !== 1)
      throw new Error(`ingest answered ${res.status} ${JSON.stringify(answer).slice(0, 300)}`);
    return performance.now() - start;
  };
  const floor = async (part: Part): Promise<number> => {
    const start = performance.now();
    const res = await fetch(`${url}/v1/bench/floor`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chain: part.chain, frames: part.frames, locks: part.locks }),
    });
    if (res.status !== 200) throw new Error(`floor answered ${res.status} ${await res.text()}`);
    return performance.now() - start;
  };
  type Send = (p: Part) => Promise<number>;
  const serial = async (parts: Part[], send: Send) => {
    const lat: number[] = [];
    for (const p of parts) lat.push(await send(p));
    return lat;
  };
  const measure = async (runs: Part[][], send: Send) => {
    const start = performance.now();
    const lats = (await Promise.all(runs.map((parts) => serial(parts, send)))).flat();
    const ms = performance.now() - start;
    const frames = runs.reduce((n, parts) => n + parts.length * BATCH, 0);
    return { frames, fps: (frames / ms) * 1000, lats };
  };

  // Each measurement writes runs of its own (fresh chains); the batches are made before the clock starts.
  const tag = Date.now().toString(36);
  let made = 0;
  const one = () => [batches(hostId, secret, `one-${tag}-${made++}`, ONE_RUN_BATCHES)];
  const many = () => Array.from({ length: RUNS }, () => batches(hostId, secret, `many-${tag}-${made++}`, MANY_BATCHES));
  await measure([batches(hostId, secret, `warm-${tag}`, 2)], ingest);
  await measure([batches(hostId, secret, `warmf-${tag}`, 2)], floor);
  const results: Record<string, { frames: number; fps: number[]; lats: number[] }> = {};
  const record = (label: string, r: Awaited<ReturnType<typeof measure>>) => {
    results[label] ??= { frames: r.frames, fps: [], lats: [] };
    results[label].fps.push(r.fps);
    results[label].lats.push(...r.lats);
  };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which goes first, so neither always runs on a warmer server.
    const order: [string, Send][] =
      round % 2 === 0
        ? [
            ["ingest", ingest],
            ["floor", floor],
          ]
        : [
            ["floor", floor],
            ["ingest", ingest],
          ];
    for (const [what, send] of order) record(`${what}, one run`, await measure(one(), send));
    for (const [what, send] of order) record(`${what}, ${RUNS} runs`, await measure(many(), send));
  }

  console.log(`\nbatches of ${BATCH} frames and 1 lock, wrangler dev (test-only Worker) on ${url}, ${ROUNDS} rounds, medians\n`);
  console.log("| path | frames a round | frames/s | p50 batch ms | p99 batch ms |\n|---|---:|---:|---:|---:|");
  for (const label of ["ingest, one run", "floor, one run", `ingest, ${RUNS} runs`, `floor, ${RUNS} runs`]) {
    const r = results[label]!;
    console.log(`| ${label} | ${r.frames} | ${median(r.fps).toFixed(0)} | ${pct(r.lats, 50).toFixed(1)} | ${pct(r.lats, 99).toFixed(1)} |`);
  }
  const value = median(results["ingest, one run"]!.fps);
  const fl = median(results["floor, one run"]!.fps);
  const manyRatio = median(results[`ingest, ${RUNS} runs`]!.fps) / median(results[`floor, ${RUNS} runs`]!.fps);
  console.log(
    `\nRESULT ${JSON.stringify({ name: "ingest", value: Math.round(value), unit: "frames/s", floor: Math.round(fl), ratio: Number((value / fl).toFixed(3)), ratio_many_runs: Number(manyRatio.toFixed(3)) })}`,
  );
} finally {
  child.kill("SIGINT");
  await new Promise((resolve) => child.once("exit", resolve));
  rmSync(persist, { recursive: true, force: true });
}
