import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { bytesToHex, newSecretKey, publicKeyOf } from "../../protocol/index.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import { enrollSampleHost, shipSampleRun } from "../../test/support/large-run.ts";
import { devArgs, ensureDatabase, localUrl, ROOT, waitHealthy } from "../dev-setup.ts";

const FRAMES = Number(process.env.BENCH_FRAMES ?? 100_000);
const STATE = process.env.BENCH_STATE ?? join(tmpdir(), `oxagen-export-${FRAMES}`);
const BATCH = 5000;

useNodeCrypto();
mkdirSync(STATE, { recursive: true });
const keyFile = join(STATE, "signing-key");
if (!existsSync(keyFile)) writeFileSync(keyFile, bytesToHex(newSecretKey()), { mode: 0o600 });
const signingKey = readFileSync(keyFile, "utf8").trim();
const state = ensureDatabase(STATE, join(STATE, "oxagen-dev.json"));

const port = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const p = (s.address() as { port: number }).port;
    s.close(() => resolve(p));
  });
});
const url = localUrl(port);
const child = spawn(process.execPath, devArgs(port, ["--persist-to", STATE, "--var", `OXAGEN_SIGNING_KEY:${signingKey}`]), {
  cwd: ROOT,
  stdio: ["ignore", "ignore", "inherit"],
});

// The workerd process among wrangler's descendants, and its resident memory (MB).
function descendants(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) out.push(Number(entry), ...descendants(Number(entry)));
    } catch {}
  }
  return out;
}
const workerd = () => descendants(child.pid!).find((p) => readFileSync(`/proc/${p}/cmdline`, "utf8").includes("workerd"));
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

try {
  await waitHealthy(url);
  const marker = join(STATE, "run.json");
  const op = (path: string, init: RequestInit = {}) =>
    fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${state.token}`, ...init.headers } });
  if (!existsSync(marker)) {
    const host = await enrollSampleHost(url, state.token, "bench-export");
    const start = performance.now();
    const { chain, frames: sent } = await shipSampleRun(url, host, FRAMES, (n) => {
      if (n % 100_000 < BATCH) process.stderr.write(`ingested ${n} frames\n`);
    });
    const hostId = host.id;
    writeFileSync(marker, JSON.stringify({ hostId, chain, frames: sent, ingestSeconds: (performance.now() - start) / 1000 }));
  }
  const run = JSON.parse(readFileSync(marker, "utf8")) as { chain: string; frames: number; ingestSeconds: number };

  const pid = workerd();
  if (!pid) throw new Error("no workerd process found under wrangler");
  const idle = rssMb(pid);
  let peak = idle;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(pid));
  }, 20);
  const file = join(STATE, "bundle.jsonl");
  const start = performance.now();
  const res = await op(`/v1/runs/${run.chain}/export`);
  if (res.status !== 200 || !res.body) throw new Error(`export answered ${res.status} ${await res.text()}`);
  const out = createWriteStream(file);
  let chunks = 0;
  const reader = res.body.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    chunks++;
    if (!out.write(r.value)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
  }
  await new Promise<void>((resolve) => out.end(() => resolve()));
  const exportMs = performance.now() - start;
  clearInterval(sampler);
  const size = statSync(file).size;

  const serverKey = bytesToHex(publicKeyOf(Buffer.from(signingKey, "hex")));
  const v0 = performance.now();
  const verified = spawnSync(
    process.execPath,
    [join(import.meta.dirname, "command-rss.ts"), "verify", file, "--server-key", serverKey, "--json"],
    {
      encoding: "utf8",
      maxBuffer: 1 << 30,
    },
  );
  const verifyMs = performance.now() - v0;
  const { exit, maxRss } = JSON.parse(verified.stderr.slice(verified.stderr.lastIndexOf("\n") + 1)) as { exit: number; maxRss: number };
  const summary = (JSON.parse(verified.stdout) as { summary: { frames: number } }).summary;

  const rows: [string, string][] = [
    ["frames in the run", String(run.frames)],
    ["ingest (s, once, when the state folder was made)", run.ingestSeconds.toFixed(0)],
    ["bundle bytes", String(size)],
    ["export (ms)", exportMs.toFixed(0)],
    ["export (frames/s)", Math.round((run.frames / exportMs) * 1000).toString()],
    ["response chunks", String(chunks)],
    ["workerd RSS before the export (MB)", idle.toFixed(0)],
    ["workerd RSS, peak during the export (MB)", peak.toFixed(0)],
    ["oxagen verify: exit", String(exit)],
    ["oxagen verify: frames", String(summary.frames)],
    ["oxagen verify: wall (ms)", verifyMs.toFixed(0)],
    ["oxagen verify: peak RSS (MB)", (maxRss / 1024).toFixed(0)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
  console.log(
    `RESULT ${JSON.stringify({ name: "export", value: Math.round((run.frames / exportMs) * 1000), unit: "frames/s", workerd_peak_mb: Math.round(peak), workerd_growth_mb: Math.round(peak - idle), verify_exit: exit, verify_peak_rss_mb: Math.round(maxRss / 1024) })}`,
  );
} finally {
  child.kill("SIGINT");
  await new Promise((resolve) => child.once("exit", resolve));
}
