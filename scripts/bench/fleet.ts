// npm run bench:fleet — the hosted backend under a fleet, against the real Worker under `wrangler
// dev` with every platform call counted (OXAGEN_METER=1, workers/lib/meter.ts).
//
// N simulated computers (N = 1, 10, 50, 200), each enrolled with its own host key and holding its
// push connection open, ship one run's 50-frame batch every 2 s (48 tool calls, one priced model
// call, a turn; a lock every 30th batch), host-signed like a recorder's, in a workspace with three
// budget clauses (workspace month, host day, run lifetime). Per N it prints batches/s, p50/p95 of
// a batch, and per batch what each component asked for: D1 statements on the request path and
// written by the projection's consumer, Durable Object calls by namespace, Queue messages, and the
// WorkspaceObject's time per report. Then the same with BENCH_SPEND spend records already counted
// (300k), and the report's time with BENCH_SPEND_MAX (1M). Last, a policy change to BENCH_PUSH
// (1,000) connected recorders, each verifying the signed policy the push carries (or fetching it
// when the push carries none or it is refused) and acknowledging it as the recorder does: the
// time until each applied it (p50/p95/max), the policy fetches per delivery, and what the
// operator's request asked of D1 and the objects.
//
// The floor of each figure is in the same run: a computer's batch alone (N = 1) for latency, and
// the D1 statements of the same batches on main as issue 23 measured them (5 round trips, 10
// statements a batch) for the statements.
//
//   BENCH_FLEET   the N to run (default 1,10,50,200)     BENCH_SECONDS  seconds per N (default 20)
//   BENCH_SPEND   spend records counted (default 300000) BENCH_SPEND_MAX (default 1000000; 0: skip)
//   BENCH_PUSH    recorders for the policy change (1000) BENCH_CHANGES  policy changes (default 3)
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import {
  bytesToHex,
  ChainWriter,
  type Frame,
  openPolicy,
  policyEtag,
  publicKeyOf,
  ROUTES,
  runIdFor,
  type SignedLock,
  type SignedPolicy,
  signRequest,
} from "../../protocol/index.ts";
import { SERVER_SECRET } from "../../test/support/sample-run.ts";
import { startWorker } from "../../test/support/worker.ts";
import { hostFetch } from "./host-fetch.ts";

useNodeCrypto();

const FLEET = (process.env.BENCH_FLEET ?? "1,10,50,200").split(",").map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const SPEND = Number(process.env.BENCH_SPEND ?? 300_000);
const SPEND_MAX = Number(process.env.BENCH_SPEND_MAX ?? 1_000_000);
const PUSH = Number(process.env.BENCH_PUSH ?? 1000);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 3);
const EVERY_MS = 2000;
const FRAMES = 50;
const serverKey = publicKeyOf(SERVER_SECRET);

const worker = await startWorker({
  config: join(import.meta.dirname, "worker/wrangler.toml"),
  vars: { OXAGEN_METER: "1", OXAGEN_PROJECTION_MS: "5000" },
});
const url = worker.url;
const json = async (res: Response) => {
  if (!res.ok) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, unknown>>;
};
const meter = async (reset = false) => (await json(await fetch(`${url}/__meter${reset ? "?reset=1" : ""}`))) as Record<string, number>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

interface Sim {
  id: string;
  secret: Uint8Array;
  etag: string | null;
  issued: number;
  applied: Map<string, number>;
  ws: WebSocket | null;
}

/** What the simulated recorders did with the pushes: policy fetches made, pushed policies taken, and refused. */
const push = { fetches: 0, carried: 0, refused: 0 };

const signed = (sim: Sim, path: string, headers: Record<string, string> = {}) =>
  signRequest(sim.secret, { origin: url, method: "GET", pathAndQuery: path, hostId: sim.id, headers, body: new Uint8Array() });

async function enroll(): Promise<Sim> {
  const et = (await json(await worker.api("/v1/enrollment-tokens", { method: "POST", body: "{}" }))) as { token: string };
  const secret = crypto.getRandomValues(new Uint8Array(32));
  const res = await fetch(`${url}/v1/enroll`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: et.token, public_key: bytesToHex(publicKeyOf(secret)), hostname: "bench", harnesses: ["claude-code"] }),
  });
  return { id: ((await json(res)) as { host_id: string }).host_id, secret, etag: null, issued: 0, applied: new Map(), ws: null };
}

/** The recorder's checks of a signed policy (collector/recorder/policy-cache.ts): the pinned key, this host, never older. */
function take(sim: Sim, body: SignedPolicy): void {
  const policy = openPolicy(body, serverKey);
  if (policy.host !== sim.id) throw new Error(`policy for ${policy.host}, not ${sim.id}`);
  if (policy.issued_ms < sim.issued) throw new Error("policy issued before the cached one");
  sim.issued = policy.issued_ms;
  sim.etag = policyEtag(body);
}

/** The recorder's refresh: fetch with If-None-Match, verify under the pinned key. */
async function refresh(sim: Sim): Promise<void> {
  push.fetches++;
  const headers: Record<string, string> = sim.etag ? { "if-none-match": `"${sim.etag}"` } : {};
  const res = await fetch(`${url}${ROUTES.policy}`, { headers: { ...headers, ...signed(sim, ROUTES.policy, headers) } });
  if (res.status === 304) return;
  take(sim, (await json(res)) as unknown as SignedPolicy);
}

async function connect(sim: Sim): Promise<void> {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}${ROUTES.push}`, { headers: signed(sim, ROUTES.push) } as unknown as string[]);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`push connection for ${sim.id} failed`));
  });
  ws.onmessage = (ev) => {
    if (ev.data === "pong") return;
    const msg = JSON.parse(String(ev.data)) as { type: string; etag: string; change: string; policy?: SignedPolicy };
    if (msg.type !== "policy") return;
    const ack = () => {
      sim.applied.set(msg.change, performance.now());
      ws.send(JSON.stringify({ type: "ack", change: msg.change, etag: sim.etag }));
    };
    if (msg.etag !== "*" && msg.etag === sim.etag) return ack();
    // As the recorder does (collector/recorder/push.ts): the carried policy when it holds, else a fetch.
    if (msg.policy) {
      try {
        take(sim, msg.policy);
        push.carried++;
        return ack();
      } catch {
        push.refused++;
      }
    }
    void refresh(sim).then(ack, () => {});
  };
  sim.ws = ws;
}

/** One computer's run: batches of 50 frames as its recorder ships them. */
class SimRun {
  readonly chain: string;
  readonly session = crypto.randomUUID();
  readonly writer: ChainWriter;
  t = Date.now();
  batches = 0;
  readonly sim: Sim;
  constructor(sim: Sim) {
    this.sim = sim;
    this.chain = runIdFor(sim.id, "claude-code", this.session);
    this.writer = new ChainWriter(this.chain);
  }
  next(): Uint8Array<ArrayBuffer> {
    const frames: Frame[] = [];
    const add = (kind: Parameters<ChainWriter["append"]>[0], payload: object) => {
      this.t += 10;
      frames.push(this.writer.append(kind, payload as never, this.t).frame);
    };
    if (this.batches === 0) add("agent_start", { path: "hook", harness: "claude-code", session_id: this.session });
    add("turn_start", { path: "hook", prompt: { sha256: "c".repeat(64), size: 20 } });
    add("llm_call", {
      path: "gateway",
      vendor: "anthropic",
      model: "claude-sonnet-4-5",
      forwarded: true,
      status: 200,
      usage: { input_tokens: 1200, output_tokens: 300 },
    });
    while (frames.length < FRAMES)
      add("tool_call", {
        path: "hook",
        tool_name: "Bash",
        tool_use_id: `call-${this.batches}-${frames.length}`,
        status: "ok",
        exit_code: 0,
        duration_ms: 120,
        input: { sha256: "a".repeat(64), size: 42 },
        output: { sha256: "b".repeat(64), size: 900 },
      });
    const locks: SignedLock[] =
      this.batches % 30 === 29 ? [this.writer.lock({ secretKey: this.sim.secret, hostId: this.sim.id, t: this.t + 1 })!] : [];
    this.batches++;
    const part = { chain: this.chain, run: { harness: "claude-code", agent: null, session_id: this.session }, frames, locks };
    return Buffer.from(JSON.stringify({ chains: [part] }));
  }
}

/** N computers shipping a batch every 2 s for SECONDS: latencies, batches, and the meter's counts over the run. */
async function fleet(sims: Sim[]) {
  await meter(true);
  const lat: number[] = [];
  const end = performance.now() + SECONDS * 1000;
  const t0 = performance.now();
  await Promise.all(
    sims.map(async (sim, i) => {
      const run = new SimRun(sim);
      // Spread over the first interval, as a fleet's recorders are.
      await sleep((i * EVERY_MS) / sims.length);
      while (performance.now() < end) {
        const started = performance.now();
        const body = run.next();
        const res = await hostFetch(url, sim, "POST", ROUTES.ingest, { "content-type": "application/json" }, body);
        const answer = (await res.json()) as { chains?: { status: string }[] };
        if (res.status !== 200 || answer.chains?.[0]?.status !== "accepted")
          throw new Error(`ingest ${res.status} ${JSON.stringify(answer).slice(0, 200)}`);
        lat.push(performance.now() - started);
        await sleep(Math.max(0, EVERY_MS - (performance.now() - started)));
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  // The last rows reach D1 through the queue after the coalescing window (5 s) and a batch's wait (5 s).
  await sleep(12_000);
  return { lat, batches: lat.length, seconds, counts: await meter(true) };
}

const sum = (c: Record<string, number>, re: RegExp) =>
  Object.entries(c).reduce((n, [k, v]) => (re.test(k) && !k.endsWith(".ms") ? n + v : n), 0);

function perBatch(label: string, r: Awaited<ReturnType<typeof fleet>>) {
  const c = r.counts;
  const b = r.batches;
  const reports = c["request.do.WORKSPACES.report"] ?? 0;
  return {
    label,
    batches_per_s: b / r.seconds,
    p50_ms: pct(r.lat, 50),
    p95_ms: pct(r.lat, 95),
    d1_request: sum(c, /^(request|HostObject|ChainObject|WorkspaceObject)\.d1_statements$/) / b,
    d1_projection: sum(c, /^projection\.d1_statements$/) / b,
    do_hosts: sum(c, /^request\.do\.HOSTS\./) / b,
    do_chains: sum(c, /^request\.do\.CHAINS\./) / b,
    do_workspaces: sum(c, /^(request|ChainObject)\.do\.WORKSPACES\./) / b,
    queue: sum(c, /\.queue_messages$/) / b,
    report_ms: reports > 0 ? (c["request.do.WORKSPACES.report.ms"] ?? 0) / reports : 0,
  };
}

const rows: ReturnType<typeof perBatch>[] = [];
const seed = async (from: number, count: number) => {
  const day = new Date().toISOString().slice(0, 10);
  for (let i = 0; i < count; i += 20_000)
    await json(
      await fetch(`${url}/v1/bench/seed-spend`, {
        method: "POST",
        body: JSON.stringify({ workspace: worker.workspace, from: from + i, count: Math.min(20_000, count - i), hosts: 1000, day }),
      }),
    );
};
/** The WorkspaceObject's time per report of one batch's spend, from one computer's batches alone. */
async function reportMs(sim: Sim): Promise<number> {
  const run = new SimRun(sim);
  await meter(true);
  for (let i = 0; i < 20; i++) await hostFetch(url, sim, "POST", ROUTES.ingest, { "content-type": "application/json" }, run.next());
  const c = await meter(true);
  return (c["request.do.WORKSPACES.report.ms"] ?? 0) / Math.max(1, c["request.do.WORKSPACES.report"] ?? 0);
}

try {
  const policy = {
    mode: "enforce",
    tools: [],
    default_tool_decision: "none",
    models: null,
    budgets: [
      { id: "month", scope: "workspace", window: "month", limit_microusd: 10_000_000_000 },
      { id: "box", scope: "host", window: "day", limit_microusd: 1_000_000_000 },
      { id: "each", scope: "run", window: "run", limit_microusd: 1_000_000_000 },
    ],
    retention: { mode: "keep", keep: ["prompt"] },
  };
  await json(await worker.api(`/v1/workspaces/${worker.workspace}/policy`, { method: "PUT", body: JSON.stringify(policy) }));
  const sims: Sim[] = [];
  const most = Math.max(...FLEET, PUSH);
  while (sims.length < Math.max(...FLEET)) sims.push(await enroll());
  for (const s of sims) await connect(s);
  await Promise.all(sims.map(refresh));
  const reportAt: [number, number][] = [[0, await reportMs(sims[0]!)]];

  for (const n of FLEET) rows.push(perBatch(`N=${n}`, await fleet(sims.slice(0, n))));
  if (SPEND > 0) {
    await seed(0, SPEND);
    reportAt.push([SPEND, await reportMs(sims[0]!)]);
    for (const n of FLEET) rows.push(perBatch(`N=${n}, ${SPEND / 1000}k spend records`, await fleet(sims.slice(0, n))));
  }
  if (SPEND_MAX > SPEND) {
    await seed(SPEND, SPEND_MAX - SPEND);
    reportAt.push([SPEND_MAX, await reportMs(sims[0]!)]);
  }

  console.log(
    `\nbench:fleet — wrangler dev on ${url}; each computer a ${FRAMES}-frame batch every ${EVERY_MS / 1000} s for ${SECONDS} s\n`,
  );
  console.log(
    "| fleet | batches/s | p50 ms | p95 ms | D1 stmts/batch (request path) | D1 stmts/batch (projection) | HostObject calls | ChainObject calls | WorkspaceObject calls | Queue msgs | report ms |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of rows)
    console.log(
      `| ${r.label} | ${r.batches_per_s.toFixed(1)} | ${r.p50_ms.toFixed(0)} | ${r.p95_ms.toFixed(0)} | ${r.d1_request.toFixed(2)} | ${r.d1_projection.toFixed(3)} | ${r.do_hosts.toFixed(2)} | ${r.do_chains.toFixed(2)} | ${r.do_workspaces.toFixed(2)} | ${r.queue.toFixed(2)} | ${r.report_ms.toFixed(2)} |`,
    );
  console.log("\nWorkspaceObject time per report (one computer's batches alone), by spend records counted:");
  for (const [records, ms] of reportAt) console.log(`  ${String(records).padStart(8)} records: ${ms.toFixed(2)} ms`);
  const flat = reportAt.length > 1 ? reportAt.at(-1)![1] / reportAt[0]![1] : 1;

  // A policy change to PUSH connected recorders.
  while (sims.length < most) sims.push(await enroll());
  for (const s of sims) if (!s.ws) await connect(s);
  await Promise.all(sims.map(refresh));
  await meter(true);
  const one = sims[0]!;
  one.etag = null;
  await refresh(one);
  const perFetch = await meter(true);
  const applied: number[] = [];
  const apiMs: number[] = [];
  let missed = 0;
  push.fetches = 0;
  push.carried = 0;
  push.refused = 0;
  let opD1 = 0;
  let opDo = 0;
  for (let i = 0; i < CHANGES; i++) {
    const t0 = performance.now();
    const before = new Set(sims.flatMap((s) => [...s.applied.keys()]));
    await meter(true);
    const answer = (await json(
      await worker.api(`/v1/workspaces/${worker.workspace}/policy`, {
        method: "PUT",
        body: JSON.stringify({ ...policy, tools: i % 2 === 0 ? [{ id: "bash", tool: "Bash", decision: "allow", reason: "bench" }] : [] }),
      }),
    )) as { propagation: { hosts: number; applied: number } };
    apiMs.push(performance.now() - t0);
    const counts = await meter(true);
    const fetches = counts["request.do.HOSTS.authenticate"] ?? 0;
    const fetchD1 = sum(perFetch, /^(request|HostObject|ChainObject|WorkspaceObject)\.d1_statements$/);
    opD1 = Math.max(opD1, sum(counts, /^(request|HostObject|WorkspaceObject)\.d1_statements$/) - fetches * fetchD1);
    opDo = Math.max(opDo, sum(counts, /^request\.do\./) - fetches * sum(perFetch, /^request\.do\./));
    for (const s of sims) {
      const change = [...s.applied.keys()].find((k) => !before.has(k));
      if (change) applied.push(s.applied.get(change)! - t0);
      else missed++;
    }
    if (answer.propagation.applied !== answer.propagation.hosts)
      console.log(`change ${i}: ${answer.propagation.hosts - answer.propagation.applied} not applied at return`);
  }
  console.log(`\npolicy change to ${sims.length} connected recorders, ${CHANGES} changes:`);
  console.log(
    `  recorder applied it: p50 ${pct(applied, 50).toFixed(0)} ms, p95 ${pct(applied, 95).toFixed(0)} ms, max ${pct(applied, 100).toFixed(0)} ms (${applied.length} acks, ${missed} not applied)`,
  );
  console.log(
    `  per delivery: ${(push.fetches / Math.max(1, applied.length)).toFixed(3)} policy fetches (${push.fetches}); ${push.carried} carried in the push, ${push.refused} refused`,
  );
  console.log(`  operator's call (returns once all acked): p50 ${pct(apiMs, 50).toFixed(0)} ms, p95 ${pct(apiMs, 95).toFixed(0)} ms`);
  console.log(`  the operator's request beyond the recorders' fetches: ${opD1} D1 statements, ${opDo} Durable Object calls`);
  console.log(
    `  one policy fetch: ${sum(perFetch, /d1_statements$/)} D1 statements, ${sum(perFetch, /^request\.do\./)} Durable Object calls`,
  );
  const at = (label: string) => rows.find((r) => r.label === label);
  console.log(
    `\nRESULT ${JSON.stringify({
      bench: "fleet",
      rows: rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === "number" ? Number(v.toFixed(3)) : v]))),
      report_ms_by_records: reportAt,
      report_flat_ratio: Number(flat.toFixed(2)),
      push_recorders: sims.length,
      push_p50_ms: pct(applied, 50),
      push_p95_ms: pct(applied, 95),
      push_max_ms: pct(applied, 100),
      push_not_applied: missed,
      push_fetches_per_delivery: Number((push.fetches / Math.max(1, applied.length)).toFixed(3)),
      push_carried: push.carried,
      push_refused: push.refused,
      push_api_p95_ms: pct(apiMs, 95),
      operator_request_d1: opD1,
      operator_request_do_calls: opDo,
      max_d1_request_per_batch: Math.max(...rows.map((r) => r.d1_request)),
      max_d1_projection_per_batch: Math.max(...rows.map((r) => r.d1_projection)),
      n1_p50_ms: at("N=1")?.p50_ms ?? null,
    })}`,
  );
} finally {
  await worker.stop();
}
