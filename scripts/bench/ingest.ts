// npm run bench:ingest — frames/s accepted by POST /v1/ingest under `wrangler dev` on loopback:
// (a) one run in batches of 500, (b) 50 runs concurrently; p50/p99 batch latency; and, in the same
// run, a floor: the same rows written into a ChainObject with no auth, checks or hashing
// (POST /v1/bench/floor, reachable only with BENCH=1).
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { bytesToHex, ChainWriter, type Frame, newSecretKey, publicKeyOf, runIdFor, signRequest } from "../../protocol/index.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import { ensureDatabase, ROOT, waitHealthy, WRANGLER } from "../dev-setup.ts";

const BATCH = 500;
const ONE_RUN_BATCHES = Number(process.env.BENCH_BATCHES ?? 20);
const RUNS = 50;
const MANY_BATCHES = Number(process.env.BENCH_MANY_BATCHES ?? 2);
const PERSIST = join(ROOT, ".wrangler/bench-state");

useNodeCrypto();

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function batches(
  hostId: string,
  session: string,
  count: number,
): { chain: string; run: { harness: string; agent: null; session_id: string }; frames: Frame[] }[] {
  const chain = runIdFor(hostId, "claude-code", session);
  const w = new ChainWriter(chain);
  const out = [];
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
    out.push({ chain, run: { harness: "claude-code", agent: null, session_id: session }, frames });
  }
  return out;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const state = ensureDatabase(PERSIST, join(PERSIST, "oxagen-dev.json"));
const key = bytesToHex(newSecretKey());
const child = spawn(
  process.execPath,
  [
    WRANGLER,
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--persist-to",
    PERSIST,
    "--var",
    "BENCH:1",
    "--var",
    `OXAGEN_SIGNING_KEY:${key}`,
  ],
  {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "inherit"],
  },
);
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

  const ingest = async (part: ReturnType<typeof batches>[number]): Promise<number> => {
    const body = Buffer.from(JSON.stringify({ chains: [{ ...part, locks: [] }] }));
    const start = performance.now();
    const res = await fetch(`${url}/v1/ingest`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...signRequest(secret, {
          origin: url,
          method: "POST",
          pathAndQuery: "/v1/ingest",
          hostId,
          headers: { "content-type": "application/json" },
          body,
        }),
      },
      body,
    });
    const answer = (await res.json()) as { chains?: { stored: number; status: string }[] };
    if (res.status !== 200 || answer.chains?.[0]?.status !== "accepted")
      throw new Error(`ingest answered ${res.status} ${JSON.stringify(answer).slice(0, 300)}`);
    return performance.now() - start;
  };
  const floor = async (part: ReturnType<typeof batches>[number]): Promise<number> => {
    const start = performance.now();
    const res = await fetch(`${url}/v1/bench/floor`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chain: part.chain, frames: part.frames }),
    });
    if (res.status !== 200) throw new Error(`floor answered ${res.status} ${await res.text()}`);
    return performance.now() - start;
  };
  const serial = async (parts: ReturnType<typeof batches>, send: (p: ReturnType<typeof batches>[number]) => Promise<number>) => {
    const lat: number[] = [];
    for (const p of parts) lat.push(await send(p));
    return lat;
  };
  const measure = async (
    label: string,
    runs: ReturnType<typeof batches>[],
    send: (p: ReturnType<typeof batches>[number]) => Promise<number>,
  ) => {
    const start = performance.now();
    const lats = (await Promise.all(runs.map((parts) => serial(parts, send)))).flat();
    const ms = performance.now() - start;
    const frames = runs.reduce((n, parts) => n + parts.length * BATCH, 0);
    return { label, frames, fps: (frames / ms) * 1000, p50: pct(lats, 50), p99: pct(lats, 99) };
  };

  const tag = Date.now().toString(36);
  await measure("warm-up", [batches(hostId, `warm-${tag}`, 2)], ingest);
  await measure("warm-up", [batches(hostId, `warmf-${tag}`, 2)], floor);
  const rows = [];
  rows.push(await measure("ingest, one run", [batches(hostId, `one-${tag}`, ONE_RUN_BATCHES)], ingest));
  rows.push(await measure("floor, one run", [batches(hostId, `onef-${tag}`, ONE_RUN_BATCHES)], floor));
  const many = (p: string) => Array.from({ length: RUNS }, (_, i) => batches(hostId, `${p}-${i}-${tag}`, MANY_BATCHES));
  rows.push(await measure(`ingest, ${RUNS} runs`, many("many"), ingest));
  rows.push(await measure(`floor, ${RUNS} runs`, many("manyf"), floor));

  console.log(`\nbatches of ${BATCH} frames, wrangler dev on ${url}\n`);
  console.log("| path | frames | frames/s | p50 batch ms | p99 batch ms |\n|---|---:|---:|---:|---:|");
  for (const r of rows) console.log(`| ${r.label} | ${r.frames} | ${r.fps.toFixed(0)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} |`);
  const value = rows[0]!.fps;
  const fl = rows[1]!.fps;
  console.log(
    `\nRESULT ${JSON.stringify({ name: "ingest", value: Math.round(value), unit: "frames/s", floor: Math.round(fl), ratio: Number((value / fl).toFixed(3)) })}`,
  );
} finally {
  child.kill("SIGINT");
}
