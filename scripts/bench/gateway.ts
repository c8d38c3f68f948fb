// npm run bench:gateway — a streamed Anthropic call through the recorder's model gateway against the
// same call straight to the same upstream, alternating in one run: added latency (p50, p99), time
// to first byte, then 200 concurrent streams each way (throughput, the recorder's RSS).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
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
for (let i = 0; i < 100 && !(await reachable(gatewayUrl)); i++) await sleep(100);
const idleRss = proc("VmRSS");

const body = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 256, stream: true, messages: [{ role: "user", content: "hi" }] });
const agents = { direct: new Agent({ keepAlive: true }), gateway: new Agent({ keepAlive: true }) };

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
for (let i = 0; i < 20; i++) {
  await call(upstream.url, agents.direct);
  await call(gatewayUrl, agents.gateway);
}
for (let i = 0; i < CALLS; i++) {
  direct.push(await call(upstream.url, agents.direct));
  through.push(await call(gatewayUrl, agents.gateway));
}

// The same, paced as a harness paces its calls (a tool runs between two model calls): the record of
// one call is written before the next arrives, so what is left is the proxy's own cost.
const PACE_MS = Number(process.env.BENCH_PACE_MS ?? 30);
const pacedDirect: { total: number; ttfb: number }[] = [];
const pacedThrough: { total: number; ttfb: number }[] = [];
for (let i = 0; i < CALLS / 2; i++) {
  await sleep(PACE_MS);
  pacedDirect.push(await call(upstream.url, agents.direct));
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
const burstGateway = await burst(gatewayUrl, agents.gateway);
const peakRss = proc("VmHWM");
const status = JSON.parse(readFileSync(`${home.dir}/recorder-status.json`, "utf8")) as { gateway?: { carried: number } };
spawnSync(NODE, [TACHO, "daemon", "stop"], { env });
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
  [`streamed call through the gateway (${CALLS}, ${DELTAS} deltas each) p50 / p99 ms`, `${value.toFixed(2)} / ${p99(through).toFixed(2)}`],
  ["floor: the same call direct to the upstream, alternating, p50 / p99 ms", `${floor.toFixed(2)} / ${p99(direct).toFixed(2)}`],
  ["added latency p50 / p99 ms", `${(value - floor).toFixed(2)} / ${(p99(through) - p99(direct)).toFixed(2)}`],
  ["time to first byte p50: gateway / direct ms", `${ttfb(through).toFixed(2)} / ${ttfb(direct).toFixed(2)}`],
  [
    `paced (${PACE_MS} ms between calls, ${CALLS / 2} each) added latency p50 / p99 ms`,
    `${(p50(pacedThrough) - p50(pacedDirect)).toFixed(2)} / ${(p99(pacedThrough) - p99(pacedDirect)).toFixed(2)}`,
  ],
  ["paced: time to first byte p50, gateway / direct ms", `${ttfb(pacedThrough).toFixed(2)} / ${ttfb(pacedDirect).toFixed(2)}`],
  [`${CONCURRENT} concurrent streams: gateway / direct (s)`, `${burstGateway.seconds.toFixed(2)} / ${burstDirect.seconds.toFixed(2)}`],
  [
    `${CONCURRENT} concurrent streams: calls per second, gateway / direct`,
    `${(CONCURRENT / burstGateway.seconds).toFixed(0)} / ${(CONCURRENT / burstDirect.seconds).toFixed(0)}`,
  ],
  [
    `${CONCURRENT} concurrent streams: p99 per call, gateway / direct (ms)`,
    `${burstGateway.p99.toFixed(1)} / ${burstDirect.p99.toFixed(1)}`,
  ],
  ["recorder RSS idle / peak (MB)", `${idleRss.toFixed(1)} / ${peakRss.toFixed(1)}`],
  ["llm_call frames the gateway recorded", String(status.gateway?.carried ?? "?")],
];
const width = Math.max(...rows.map(([k]) => k!.length));
for (const [k, v] of rows) console.log(`${k!.padEnd(width)}  ${v}`);
console.log(
  `RESULT ${JSON.stringify({ name: "gateway", value: Number(value.toFixed(3)), unit: "ms", floor: Number(floor.toFixed(3)), ratio: Number((value / floor).toFixed(3)), added_p50_ms: Number((value - floor).toFixed(3)), added_p99_ms: Number((p99(through) - p99(direct)).toFixed(3)), paced_added_p50_ms: Number((p50(pacedThrough) - p50(pacedDirect)).toFixed(3)), paced_added_p99_ms: Number((p99(pacedThrough) - p99(pacedDirect)).toFixed(3)) })}`,
);
