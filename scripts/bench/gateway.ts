// npm run bench:gateway — a streamed Anthropic call (40 content deltas) against a local scripted
// upstream that closes idle keep-alive connections after 5 s (Node's default), five ways, alternating
// in one run: direct; through a bare Node proxy in its own process (pipe-proxy.ts: what one more
// process on the path costs before any metering); through the recording floor (record-proxy.ts: the
// bare proxy plus the least any recorder that keeps the record does: hash both bodies, append a frame
// and the bodies with one fsync per group commit); through the recorder's gateway, started as
// `tacho daemon start` starts it, with a budget clause on (its calls reserve from leases the stand-in
// server grants); and, when PORTKEY_GATEWAY names Portkey's `build/start-server.js`, through that
// peer. Per way: added p50/p99 over direct (sequential calls), calls/s at 50 and 200 concurrent
// streams, CPU per call of the proxy's own process (/proc utime+stime), its peak RSS, and errors.
// The RESULT line carries the gateway's figures as ratios to the bare proxy's in the same run, and
// its CPU per call as a ratio to the recording floor's (cpu_ratio_floor).
import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { defaultPolicy } from "../../protocol/index.ts";
import { createServer } from "node:net";
import { freePort, makeHome, NODE, ROOT, sleep, TACHO } from "../../test/support/recorder.ts";
import { StubServer } from "../../test/support/stub-server.ts";
import { anthropicStream, SSE_HEADERS, startUpstream } from "../../test/support/upstream.ts";

const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PER_STREAM = Number(process.env.BENCH_PER_STREAM ?? 3);
const LEVELS = [50, 200];
const DELTAS = 40;
// Portkey's build needs one change to stream here: its response headers come back immutable
// (TypeError: immutable in updateHeaders) and every call is a 500; see docs/collector.md, "The gateway".
const PORTKEY = process.env.PORTKEY_GATEWAY ?? null;

let n = 0;
const upstream = await startUpstream(() => {
  const events = anthropicStream({
    id: `msg_bench_${++n}`,
    model: "claude-sonnet-4-5",
    text: "x",
    // Usage the request could have (about a token per 4 bytes of its 0.1 KB): a call costs less than
    // the maximum the gateway reserves for it, as a real vendor's always does.
    start: { input_tokens: 30, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 1 },
    deltas: [{ output_tokens: 85 }],
  });
  const delta = events[2]!;
  return { headers: SSE_HEADERS, chunks: [...events.slice(0, 2), ...Array.from({ length: DELTAS }, () => delta), ...events.slice(3)] };
});
upstream.seen.length = 0;

// A budget clause far above what the bench spends: every call reserves its maximum cost from a lease.
const budgets = [{ id: "bench", scope: "workspace" as const, window: "day" as const, limit_microusd: 1_000_000_000_000 }];
const server = new StubServer();
server.policy = { ...defaultPolicy("ws_test", 1), budgets };
const serverPort = await server.start();
// The hook port and the gateway's (the next one) both free.
let port = await freePort();
while (!(await free(port + 1))) port = await freePort();
const home = await makeHome({ server: `http://127.0.0.1:${serverPort}`, policy: { budgets }, port });
const env = { ...process.env, OXAGEN_HOME: home.dir, OXAGEN_GATEWAY_ANTHROPIC_URL: upstream.url };
// BENCH_CPU_PROF=<dir>: the recorder (only it) writes a V8 CPU profile there when it stops.
const PROFILE = process.env.BENCH_CPU_PROF ?? null;
const daemonEnv = PROFILE ? { ...env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --cpu-prof --cpu-prof-dir=${PROFILE}`.trim() } : env;
spawnSync(NODE, [`${ROOT}/scripts/build-collector.ts`, ...(PROFILE ? ["--readable"] : [])], { stdio: "inherit" });
const started = spawnSync(NODE, [TACHO, "daemon", "start", "--json"], { env: daemonEnv, encoding: "utf8" });
if (started.status !== 0) throw new Error(`tacho daemon start failed: ${started.stderr}`);
const daemonPid = (JSON.parse(started.stdout) as { pid: number }).pid;

function portOf(child: ChildProcess, pattern: RegExp): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += String(d);
      const m = pattern.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
}
const pipe = spawn(NODE, [`${ROOT}/scripts/bench/pipe-proxy.ts`, upstream.url], { stdio: ["ignore", "pipe", "inherit"] });
const pipePort = await portOf(pipe, /^(\d+)/);
// The recording floor runs with the recorder's own young-generation size (collector/lib/recorder-process.ts).
const floorLog = `${home.dir}/floor.log`;
const floor = spawn(NODE, ["--max-semi-space-size=16", `${ROOT}/scripts/bench/record-proxy.ts`, upstream.url, floorLog], {
  stdio: ["ignore", "pipe", "inherit"],
});
const floorPort = await portOf(floor, /^(\d+)/);
let portkey: ChildProcess | null = null;
let portkeyPort = 0;
if (PORTKEY) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  portkey = spawn(NODE, [PORTKEY, `--port=${port}`, "--headless"], { stdio: ["ignore", "pipe", "inherit"] });
  portkeyPort = await portOf(portkey, /(?:localhost|127\.0\.0\.1):(\d+)/);
}

interface Way {
  name: string;
  url: string;
  pid: number | null;
  headers: Record<string, string>;
  agent: Agent;
  seq: number[];
  rate: Record<number, number[]>;
  cpuMs: number;
  cpuCalls: number;
  errors: number;
  ok: number;
  errorKinds: Map<string, number>;
}
const way = (name: string, url: string, pid: number | null, headers: Record<string, string> = {}): Way => ({
  name,
  url,
  pid,
  headers,
  agent: new Agent({ keepAlive: true }),
  seq: [],
  rate: Object.fromEntries(LEVELS.map((l) => [l, []])),
  cpuMs: 0,
  cpuCalls: 0,
  errors: 0,
  ok: 0,
  errorKinds: new Map(),
});
const ways: Way[] = [
  way("direct", upstream.url, null),
  way("bare proxy", `http://127.0.0.1:${pipePort}`, pipe.pid!),
  way("recording floor", `http://127.0.0.1:${floorPort}`, floor.pid!),
  way("Oxagen gateway", `http://127.0.0.1:${home.port + 1}`, daemonPid),
];
if (portkey)
  ways.push(
    way("Portkey 1.15.2", `http://127.0.0.1:${portkeyPort}`, portkey.pid!, {
      "x-portkey-provider": "anthropic",
      "x-portkey-custom-host": `${upstream.url}/v1`,
    }),
  );
const [direct, bare, recFloor, gateway] = ways as [Way, Way, Way, Way];

const body = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 256, stream: true, messages: [{ role: "user", content: "hi" }] });

function free(p: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer()
      .once("error", () => resolve(false))
      .listen(p, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

/** The process's CPU time (user + system, all threads) in ms. */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}
function hwmOf(pid: number): number {
  return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN) / 1024;
}

/** One streamed call: its total time in ms, or null when it failed (counted on the way). */
function call(w: Way): Promise<number | null> {
  return new Promise((resolve) => {
    const start = performance.now();
    const fail = (kind: string) => {
      w.errors++;
      w.errorKinds.set(kind, (w.errorKinds.get(kind) ?? 0) + 1);
      resolve(null);
    };
    const req = request(
      `${w.url}/v1/messages`,
      {
        method: "POST",
        agent: w.agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          "x-api-key": "sk-ant-bench",
          "anthropic-version": "2023-06-01",
          "x-claude-code-session-id": "bench-session",
          "x-oxagen-hook-secret": home.secret,
          ...w.headers,
        },
      },
      (res) => {
        res.on("data", () => {});
        res.on("error", () => fail("response broke"));
        res.on("end", () => {
          if (res.statusCode !== 200) return fail(`HTTP ${res.statusCode}`);
          w.ok++;
          resolve(performance.now() - start);
        });
      },
    );
    req.on("error", (err) => fail(err.message));
    req.end(body);
  });
}

for (let i = 0; i < 100 && (await call(gateway)) === null; i++) await sleep(100);
if (gateway.ok === 0) throw new Error(`the recorder's gateway does not answer on ${gateway.url}`);
for (const w of ways) {
  w.errors = 0;
  w.errorKinds.clear();
}
const idleRss = hwmOf(daemonPid);

// Warm-up, then sequential calls, one per way in turn.
for (let i = 0; i < 20; i++) for (const w of ways) await call(w);
for (const w of ways) w.errors = 0;
for (let i = 0; i < CALLS; i++) {
  for (const w of ways) {
    const t = await call(w);
    if (t !== null) w.seq.push(t);
  }
}

// Concurrent streams: each of `level` clients makes PER_STREAM calls back to back; the ways take
// turns, every round and level, and each way's pooled connections sit idle while the others run
// (past the upstream's 5 s keep-alive, some of them: the upstream closes them as they are reused).
for (let r = 0; r < ROUNDS; r++) {
  for (const level of LEVELS) {
    for (const w of ways) {
      const cpu0 = w.pid ? cpuOf(w.pid) : 0;
      const start = performance.now();
      let ok = 0;
      await Promise.all(
        Array.from({ length: level }, async () => {
          for (let k = 0; k < PER_STREAM; k++) if ((await call(w)) !== null) ok++;
        }),
      );
      const seconds = (performance.now() - start) / 1000;
      w.rate[level]!.push(ok / seconds);
      if (w.pid) {
        w.cpuMs += cpuOf(w.pid) - cpu0;
        w.cpuCalls += level * PER_STREAM;
      }
    }
  }
}
const peak = new Map(ways.filter((w) => w.pid).map((w) => [w.name, hwmOf(w.pid!)]));

// Not spawnSync: the stand-in server runs in this process and answers the stop's last shipment (a
// blocked one held the stop until it gave up, and the status read here was the last heartbeat's).
await promisify(execFile)(NODE, [TACHO, "daemon", "stop"], { env });
const status = JSON.parse(readFileSync(`${home.dir}/recorder-status.json`, "utf8")) as { gateway?: { carried: number } };
// Every call's llm_call, once: in the journal, or already acknowledged by the stand-in server.
const llmCalls = new Set<string>();
for (const [chain, c] of server.chains) for (const f of c.frames.values()) if (f.kind === "llm_call") llmCalls.add(`${chain}:${f.seq}`);
for (const name of readdirSync(`${home.dir}/journal`).filter((f) => f.endsWith(".jsonl"))) {
  for (const line of readFileSync(`${home.dir}/journal/${name}`, "utf8").split("\n").filter(Boolean)) {
    // Acknowledged frames stay in the file until it is compacted: the same chain and seq is one call.
    const l = JSON.parse(line) as { frames?: { kind: string; seq: number }[] };
    for (const f of l.frames ?? []) if (f.kind === "llm_call") llmCalls.add(`${name.slice(0, -".jsonl".length)}:${f.seq}`);
  }
}
const onDisk = llmCalls.size;
pipe.kill();
floor.kill();
portkey?.kill();
await upstream.close();
await server.stop();

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN;
const median = (xs: number[]) => pct(xs, 0.5);
const added = (w: Way, p: number) => pct(w.seq, p) - pct(direct.seq, p);
const cpuPerCall = (w: Way) => (w.cpuCalls ? w.cpuMs / w.cpuCalls : Number.NaN);
const fmt = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : "–");
const rows: [string, ...string[]][] = [
  ["", ...ways.map((w) => w.name)],
  [`added p50 (ms, ${CALLS} sequential calls)`, ...ways.map((w) => fmt(added(w, 0.5), 2))],
  ["added p99 (ms)", ...ways.map((w) => fmt(added(w, 0.99), 2))],
  ...LEVELS.map((l): [string, ...string[]] => [
    `calls/s, ${l} concurrent streams (median of ${ROUNDS})`,
    ...ways.map((w) => fmt(median(w.rate[l]!), 0)),
  ]),
  ["CPU per call (ms, the proxy's process)", ...ways.map((w) => fmt(cpuPerCall(w), 2))],
  ["peak RSS (MB)", ...ways.map((w) => fmt(peak.get(w.name) ?? Number.NaN, 0))],
  ["errors", ...ways.map((w) => String(w.errors))],
];
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows) console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "));
for (const w of ways) if (w.errorKinds.size) console.log(`${w.name} errors: ${JSON.stringify(Object.fromEntries(w.errorKinds))}`);
const gatewayCalls = gateway.ok;
console.log(
  `recorder RSS idle ${idleRss.toFixed(0)} MB; calls the gateway carried / llm_call frames recorded after stop / calls answered 200: ${status.gateway?.carried ?? "?"} / ${onDisk} / ${gatewayCalls}`,
);
console.log(
  `kept bodies the stand-in server received: ${server.bodies.size} in ${server.bodyUploads} upload requests (${fmt(server.bodyUploads / server.bodies.size, 3)} per body)`,
);
console.log(
  `budget leases the recorder took: ${server.leases.size}; load average at the end: ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`,
);
const ratio = (a: number, b: number) => Number((a / b).toFixed(3));
const portkeyWay = ways[4];
console.log(
  `RESULT ${JSON.stringify({
    name: "gateway",
    unit: "ratio to the bare proxy",
    cpu_ratio: ratio(cpuPerCall(gateway), cpuPerCall(bare)),
    // To the recording floor (record-proxy.ts): what any recorder that keeps the record must spend.
    cpu_ratio_floor: ratio(cpuPerCall(gateway), cpuPerCall(recFloor)),
    floor_cpu_ratio: ratio(cpuPerCall(recFloor), cpuPerCall(bare)),
    calls_ratio_200: ratio(median(gateway.rate[200]!), median(bare.rate[200]!)),
    calls_ratio_50: ratio(median(gateway.rate[50]!), median(bare.rate[50]!)),
    added_p50_ratio: ratio(added(gateway, 0.5), added(bare, 0.5)),
    added_p99_ratio: ratio(added(gateway, 0.99), added(bare, 0.99)),
    errors: gateway.errors,
    frames_on_disk: onDisk === gatewayCalls,
    requests_per_body: ratio(server.bodyUploads, server.bodies.size),
    ...(portkeyWay
      ? {
          vs_portkey: {
            added_p50: ratio(added(gateway, 0.5), added(portkeyWay, 0.5)),
            added_p99: ratio(added(gateway, 0.99), added(portkeyWay, 0.99)),
            calls_200: ratio(median(gateway.rate[200]!), median(portkeyWay.rate[200]!)),
            calls_50: ratio(median(gateway.rate[50]!), median(portkeyWay.rate[50]!)),
            cpu: ratio(cpuPerCall(gateway), cpuPerCall(portkeyWay)),
            rss: ratio(peak.get(gateway.name)!, peak.get(portkeyWay.name)!),
          },
        }
      : {}),
  })}`,
);
