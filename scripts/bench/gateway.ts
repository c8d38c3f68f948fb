// npm run bench:gateway — a streamed Anthropic call through the recorder's model gateway against the
// same call straight to the same upstream, alternating in one run: added latency (p50, p99), time
// to first byte, then 200 concurrent streams each way (throughput, the recorder's RSS). A second
// reference, alternating too: the same call through a bare Node proxy in its own process
// (pipe-proxy.ts), what one more process on the path costs on this machine before any metering.
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import { makeHome, NODE, ROOT, sleep, TACHO } from "../../test/support/recorder.ts";
import { anthropicStream, SSE_HEADERS, startUpstream } from "../../test/support/upstream.ts";

const CALLS = Number(process.env.BENCH_CALLS ?? 300);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 200);
const DELTAS = 40;

let n = 0;
const upstream = await startUpstream(() => {
  const events = anthropicStream({
    id: `msg_bench_${++n}`,
    model: "claude-sonnet-4-5",
    text: "x",
    start: { input_tokens: 1200, cache_read_input_tokens: 30_000, cache_creation_input_tokens: 0, output_tokens: 1 },
    deltas: [{ output_tokens: 85 }],
  });
  // A realistic stream: many small content deltas between message_start and message_delta.
  const delta = events[2]!;
  return { headers: SSE_HEADERS, chunks: [...events.slice(0, 2), ...Array.from({ length: DELTAS }, () => delta), ...events.slice(3)] };
});

const home = await makeHome({ policy: {} });
const env = { ...process.env, OXAGEN_HOME: home.dir, OXAGEN_GATEWAY_ANTHROPIC_URL: upstream.url };
spawnSync(NODE, [`${ROOT}/scripts/build-collector.ts`], { stdio: "inherit" });
const started = spawnSync(NODE, [TACHO, "daemon", "start", "--json"], { env, encoding: "utf8" });
if (started.status !== 0) throw new Error(`tacho daemon start failed: ${started.stderr}`);
const daemonPid = (JSON.parse(started.stdout) as { pid: number }).pid;
const proc = (field: string) =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${daemonPid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
const gatewayUrl = `http://127.0.0.1:${home.port + 1}`;
const pipe = spawn(NODE, [`${ROOT}/scripts/bench/pipe-proxy.ts`, upstream.url], { stdio: ["ignore", "pipe", "inherit"] });
const pipeUrl = await new Promise<string>((resolve) => pipe.stdout.once("data", (d) => resolve(`http://127.0.0.1:${String(d).trim()}`)));
for (let i = 0; i < 100 && !(await reachable(gatewayUrl)); i++) await sleep(100);
const idleRss = proc("VmRSS");

// BENCH_REQUEST_KB: a conversation of about that size (a harness resends the whole conversation on
// every call); the default is a one-line prompt.
const REQUEST_KB = Number(process.env.BENCH_REQUEST_KB ?? 0);
const line = "const total = items.reduce((sum, item) => sum + item.price * item.quantity, 0); // checkout\n";
const history = Array.from({ length: Math.ceil((REQUEST_KB * 1024) / (line.length * 20)) }, (_, i) => ({
  role: i % 2 ? "assistant" : "user",
  content: line.repeat(20),
}));
const body = JSON.stringify({
  model: "claude-sonnet-4-5",
  max_tokens: 256,
  stream: true,
  messages: [...history, { role: "user", content: "hi" }],
});
const agents = { direct: new Agent({ keepAlive: true }), gateway: new Agent({ keepAlive: true }), pipe: new Agent({ keepAlive: true }) };

function reachable(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(`${url}/v1/models`, { method: "HEAD" }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on("error", () => resolve(false));
    req.end();
  });
}

/** One streamed call: total time and time to the first body byte, in ms. */
function call(base: string, agent: Agent): Promise<{ total: number; ttfb: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let ttfb = -1;
    const req = request(
      `${base}/v1/messages`,
      {
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          "x-api-key": "sk-ant-bench",
          "anthropic-version": "2023-06-01",
          "x-claude-code-session-id": "bench-session",
          "x-oxagen-hook-secret": home.secret,
        },
      },
      (res) => {
        res.on("data", () => {
          if (ttfb < 0) ttfb = performance.now() - start;
        });
        res.on("end", () =>
          res.statusCode === 200 ? resolve({ total: performance.now() - start, ttfb }) : reject(new Error(`HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const direct: { total: number; ttfb: number }[] = [];
const through: { total: number; ttfb: number }[] = [];
const piped: { total: number; ttfb: number }[] = [];
for (let i = 0; i < 20; i++) {
  await call(upstream.url, agents.direct);
  await call(pipeUrl, agents.pipe);
  await call(gatewayUrl, agents.gateway);
}
for (let i = 0; i < CALLS; i++) {
  direct.push(await call(upstream.url, agents.direct));
  piped.push(await call(pipeUrl, agents.pipe));
  through.push(await call(gatewayUrl, agents.gateway));
}

// The same, paced as a harness paces its calls (a tool runs between two model calls): the record of
// one call is written before the next arrives, so what is left is the proxy's own cost.
const PACE_MS = Number(process.env.BENCH_PACE_MS ?? 30);
const pacedDirect: { total: number; ttfb: number }[] = [];
const pacedThrough: { total: number; ttfb: number }[] = [];
const pacedPiped: { total: number; ttfb: number }[] = [];
for (let i = 0; i < CALLS / 2; i++) {
  await sleep(PACE_MS);
  pacedDirect.push(await call(upstream.url, agents.direct));
  await sleep(PACE_MS);
  pacedPiped.push(await call(pipeUrl, agents.pipe));
  await sleep(PACE_MS);
  pacedThrough.push(await call(gatewayUrl, agents.gateway));
}

async function burst(base: string, agent: Agent): Promise<{ seconds: number; p99: number }> {
  const start = performance.now();
  const all = await Promise.all(Array.from({ length: CONCURRENT }, () => call(base, agent)));
  return {
    seconds: (performance.now() - start) / 1000,
    p99: pct(
      all.map((c) => c.total),
      0.99,
    ),
  };
}
const burstDirect = await burst(upstream.url, agents.direct);
const burstPipe = await burst(pipeUrl, agents.pipe);
const burstGateway = await burst(gatewayUrl, agents.gateway);
const peakRss = proc("VmHWM");
spawnSync(NODE, [TACHO, "daemon", "stop"], { env });
const status = JSON.parse(readFileSync(`${home.dir}/recorder-status.json`, "utf8")) as { gateway?: { carried: number } };
// What is on disk once the recorder stopped: every call's llm_call, once.
let onDisk = 0;
for (const name of readdirSync(`${home.dir}/journal`).filter((f) => f.endsWith(".jsonl"))) {
  for (const line of readFileSync(`${home.dir}/journal/${name}`, "utf8").split("\n").filter(Boolean)) {
    const l = JSON.parse(line) as { frames?: { kind: string }[] };
    onDisk += (l.frames ?? []).filter((f) => f.kind === "llm_call").length;
  }
}
pipe.kill();
await upstream.close();

function pct(xs: number[], p: number): number {
  return [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
}
const p50 = (xs: { total: number }[]) =>
  pct(
    xs.map((x) => x.total),
    0.5,
  );
const p99 = (xs: { total: number }[]) =>
  pct(
    xs.map((x) => x.total),
    0.99,
  );
const ttfb = (xs: { ttfb: number }[]) =>
  pct(
    xs.map((x) => x.ttfb),
    0.5,
  );
const value = p50(through);
const floor = p50(direct);
const rows = [
  [
    `streamed call through the gateway (${CALLS}, ${DELTAS} deltas each, request ${(Buffer.byteLength(body) / 1024).toFixed(1)} KB) p50 / p99 ms`,
    `${value.toFixed(2)} / ${p99(through).toFixed(2)}`,
  ],
  ["floor: the same call direct to the upstream, alternating, p50 / p99 ms", `${floor.toFixed(2)} / ${p99(direct).toFixed(2)}`],
  ["added latency p50 / p99 ms", `${(value - floor).toFixed(2)} / ${(p99(through) - p99(direct)).toFixed(2)}`],
  ["time to first byte p50: gateway / direct ms", `${ttfb(through).toFixed(2)} / ${ttfb(direct).toFixed(2)}`],
  [
    "second reference: through a bare Node proxy, p50 / p99 ms (TTFB p50)",
    `${p50(piped).toFixed(2)} / ${p99(piped).toFixed(2)} (${ttfb(piped).toFixed(2)})`,
  ],
  ["added over direct: bare proxy / gateway, p50 ms", `${(p50(piped) - floor).toFixed(2)} / ${(value - floor).toFixed(2)}`],
  [
    "the gateway's own cost (over the bare proxy) p50 / p99 ms",
    `${(value - p50(piped)).toFixed(2)} / ${(p99(through) - p99(piped)).toFixed(2)}`,
  ],
  [
    `paced (${PACE_MS} ms between calls, ${CALLS / 2} each) added latency p50 / p99 ms`,
    `${(p50(pacedThrough) - p50(pacedDirect)).toFixed(2)} / ${(p99(pacedThrough) - p99(pacedDirect)).toFixed(2)}`,
  ],
  ["paced: time to first byte p50, gateway / direct ms", `${ttfb(pacedThrough).toFixed(2)} / ${ttfb(pacedDirect).toFixed(2)}`],
  [
    "paced: added over direct p50, bare proxy / gateway ms",
    `${(p50(pacedPiped) - p50(pacedDirect)).toFixed(2)} / ${(p50(pacedThrough) - p50(pacedDirect)).toFixed(2)}`,
  ],
  [
    `${CONCURRENT} concurrent streams: gateway / bare proxy / direct (s)`,
    `${burstGateway.seconds.toFixed(2)} / ${burstPipe.seconds.toFixed(2)} / ${burstDirect.seconds.toFixed(2)}`,
  ],
  [
    `${CONCURRENT} concurrent streams: calls per second, gateway / bare proxy / direct`,
    `${(CONCURRENT / burstGateway.seconds).toFixed(0)} / ${(CONCURRENT / burstPipe.seconds).toFixed(0)} / ${(CONCURRENT / burstDirect.seconds).toFixed(0)}`,
  ],
  [
    `${CONCURRENT} concurrent streams: p99 per call, gateway / direct (ms)`,
    `${burstGateway.p99.toFixed(1)} / ${burstDirect.p99.toFixed(1)}`,
  ],
  ["recorder RSS idle / peak (MB)", `${idleRss.toFixed(1)} / ${peakRss.toFixed(1)}`],
  [
    "calls the gateway carried / llm_call frames in the journal after stop",
    `${status.gateway?.carried ?? "?"} / ${onDisk} (of ${20 + CALLS + CALLS / 2 + CONCURRENT})`,
  ],
];
const width = Math.max(...rows.map(([k]) => k!.length));
for (const [k, v] of rows) console.log(`${k!.padEnd(width)}  ${v}`);
console.log(
  `RESULT ${JSON.stringify({ name: "gateway", value: Number(value.toFixed(3)), unit: "ms", floor: Number(floor.toFixed(3)), ratio: Number((value / floor).toFixed(3)), added_p50_ms: Number((value - floor).toFixed(3)), added_p99_ms: Number((p99(through) - p99(direct)).toFixed(3)), paced_added_p50_ms: Number((p50(pacedThrough) - p50(pacedDirect)).toFixed(3)), paced_added_p99_ms: Number((p99(pacedThrough) - p99(pacedDirect)).toFixed(3)), bare_proxy_added_p50_ms: Number((p50(piped) - floor).toFixed(3)), own_p50_ms: Number((value - p50(piped)).toFixed(3)) })}`,
);
