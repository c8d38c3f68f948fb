// npm run bench:tools — one workspace tool call (an HTTP tool: a payments-like API on loopback, its
// key put on by the server) four ways, alternating in one run: the same upstream called directly
// with its key (the floor); the Worker's MCP endpoint under `wrangler dev` called directly with a
// tool token; the same endpoint called host-signed as the gateway calls it (naming the run and the
// agent), by this process; and through the recorder's gateway (`tacho daemon run`, which signs,
// forwards and records a tool_call) to the same Worker. Every way is one JSON-RPC POST sent with
// fetch on a kept-alive connection, so the client's cost is the same. Per way: p50/p99 of
// sequential calls and the added p50/p99 over direct; the gateway's own share is through the
// gateway minus host-signed direct (the same requests, naming the same run, at the Worker).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fromHex, ROUTES, runIdFor, signRequest } from "../../protocol/index.ts";
import { daemonUp, drained, enroll, eventually, newComputer, runDaemon, stopDaemon } from "../../test/support/e2e.ts";
import { startToolUpstreams } from "../../test/support/tool-upstreams.ts";
import { startWorker } from "../../test/support/worker.ts";

const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const BATCH = 10;
const KEY = "sk_bench_payments_key_0123456789abcdef";

const [worker, upstreams] = await Promise.all([startWorker(), startToolUpstreams()]);
const tool = {
  name: "refund",
  description: "Refunds part of a charge.",
  input_schema: { type: "object", properties: { charge: { type: "string" }, amount: { type: "integer" }, tag: { type: "string" } } },
  binding: { kind: "http", method: "POST", origin: upstreams.http, path: "/v1/charges/{charge}/refunds" },
  credential: KEY,
  access: [{ id: "all", decision: "allow" }],
};
const made = await worker.api("/v1/tools", { method: "POST", body: JSON.stringify(tool) });
if (made.status !== 201) throw new Error(`tool: ${made.status} ${await made.text()}`);
const minted = (await (await worker.api("/v1/tool-tokens", { method: "POST", body: JSON.stringify({ agent: "bench" }) })).json()) as {
  token: string;
};
// The recorder's own timers (not the tests' quick ones): shipping and locking as a computer does.
const computer = await newComputer({
  OXAGEN_LOCK_INTERVAL_MS: "60000",
  OXAGEN_SHIP_DELAY_MS: "300",
  OXAGEN_POLICY_INTERVAL_MS: "300000",
  OXAGEN_STATUS_INTERVAL_MS: "2000",
});
const { hostId } = await enroll(worker, computer);
const hostJson = JSON.parse(readFileSync(join(computer.env.OXAGEN_HOME!, "host.json"), "utf8")) as {
  hook_secret: string;
  secret_key: string;
};
const secret = hostJson.hook_secret;
const hostKey = fromHex(hostJson.secret_key, 32);
const mcpPath = ROUTES.mcp(worker.workspace);
let daemon: ReturnType<typeof runDaemon> | undefined = runDaemon(computer);
await daemonUp(computer);
await eventually(async () => {
  const s = JSON.parse(readFileSync(join(computer.env.OXAGEN_HOME!, "recorder-status.json"), "utf8")) as {
    gateway?: { listening: string };
  };
  return s.gateway?.listening === "listening";
}, "the gateway");

const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-11-25",
};
let id = 0;
const rpc = (args: Record<string, unknown>) =>
  JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: "refund", arguments: args } });
const args = () => ({ charge: "ch_bench", amount: 100, tag: "bench" });

interface Way {
  name: string;
  call: () => Promise<Response>;
  ms: number[];
  errors: number;
}
const ways: Way[] = [
  {
    name: "direct",
    call: () =>
      fetch(`${upstreams.http}/v1/charges/ch_bench/refunds`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ amount: 100, tag: "bench" }),
      }),
    ms: [],
    errors: 0,
  },
  {
    name: "Worker direct",
    call: () =>
      fetch(`${worker.url}${ROUTES.mcp(worker.workspace)}`, {
        method: "POST",
        headers: { ...MCP_HEADERS, authorization: `Bearer ${minted.token}` },
        body: rpc(args()),
      }),
    ms: [],
    errors: 0,
  },
  {
    name: "Worker host-signed",
    call: () => {
      const body = new TextEncoder().encode(rpc(args()));
      const signed = {
        "content-type": "application/json",
        "x-oxagen-run": runIdFor(hostId, "bench", "bench-run"),
        "x-oxagen-agent": "bench",
      };
      const auth = signRequest(hostKey, { origin: worker.url, method: "POST", pathAndQuery: mcpPath, hostId, headers: signed, body });
      return fetch(`${worker.url}${mcpPath}`, { method: "POST", headers: { ...MCP_HEADERS, ...signed, ...auth }, body });
    },
    ms: [],
    errors: 0,
  },
  {
    name: "gateway + Worker",
    call: () =>
      fetch(`http://127.0.0.1:${computer.gatewayPort}/mcp`, {
        method: "POST",
        headers: { ...MCP_HEADERS, "x-oxagen-hook-secret": secret, "x-oxagen-agent": "bench", "x-oxagen-session-id": "bench-run" },
        body: rpc(args()),
      }),
    ms: [],
    errors: 0,
  },
];

/** One call: its time to the whole answer; an error when it was not a successful call. */
async function once(w: Way, keep: boolean): Promise<void> {
  const t0 = performance.now();
  try {
    const res = await w.call();
    const text = await res.text();
    const ok = res.ok && (w.name === "direct" || (text.includes('"result"') && !text.includes('"isError":true')));
    if (!ok) w.errors++;
  } catch {
    w.errors++;
  }
  if (keep) w.ms.push(performance.now() - t0);
}

// Warm-up: connections, the Worker's isolate, the recorder's chain.
for (const w of ways) for (let i = 0; i < 20; i++) await once(w, false);
for (const w of ways) w.errors = 0;
for (let done = 0; done < CALLS; done += BATCH) for (const w of ways) for (let i = 0; i < BATCH; i++) await once(w, true);

await drained(computer);
const rows = (await (await worker.api(`/v1/tool-calls?host=${hostId}&limit=500`)).json()) as { calls: unknown[] };
daemon = await stopDaemon(daemon);
await Promise.all([worker.stop(), upstreams.close()]);

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN;
const [direct, viaWorker, viaSigned, viaGateway] = ways as [Way, Way, Way, Way];
const added = (w: Way, p: number) => pct(w.ms, p) - pct(direct.ms, p);
const fmt = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : "–");
const table: string[][] = [
  ["", ...ways.map((w) => w.name)],
  [`p50 (ms, ${CALLS} sequential calls)`, ...ways.map((w) => fmt(pct(w.ms, 0.5)))],
  ["p99 (ms)", ...ways.map((w) => fmt(pct(w.ms, 0.99)))],
  ["added p50 over direct (ms)", ...ways.map((w) => fmt(added(w, 0.5)))],
  ["added p99 over direct (ms)", ...ways.map((w) => fmt(added(w, 0.99)))],
  ["errors", ...ways.map((w) => String(w.errors))],
];
const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
for (const r of table) console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "));
console.log(
  `the gateway's own share (gateway + Worker minus Worker host-signed): p50 ${fmt(pct(viaGateway.ms, 0.5) - pct(viaSigned.ms, 0.5))} ms, p99 ${fmt(pct(viaGateway.ms, 0.99) - pct(viaSigned.ms, 0.99))} ms; meter rows of this host: ${rows.calls.length}; load average ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`,
);
const r2 = (v: number) => Number(v.toFixed(2));
console.log(
  `RESULT ${JSON.stringify({
    name: "tools",
    unit: "ms added over the upstream called directly",
    calls: CALLS,
    added_p50_ms: r2(added(viaGateway, 0.5)),
    added_p99_ms: r2(added(viaGateway, 0.99)),
    worker_added_p50_ms: r2(added(viaWorker, 0.5)),
    worker_added_p99_ms: r2(added(viaWorker, 0.99)),
    signed_added_p50_ms: r2(added(viaSigned, 0.5)),
    signed_added_p99_ms: r2(added(viaSigned, 0.99)),
    gateway_share_p50_ms: r2(pct(viaGateway.ms, 0.5) - pct(viaSigned.ms, 0.5)),
    gateway_share_p99_ms: r2(pct(viaGateway.ms, 0.99) - pct(viaSigned.ms, 0.99)),
    errors: ways.reduce((a, w) => a + w.errors, 0),
  })}`,
);
