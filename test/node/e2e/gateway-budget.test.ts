// End to end, against the real Worker: 50 concurrent streamed model calls from 3 computers, each
// through its own recorder's gateway, against one workspace budget. Each gateway reserves a call's
// maximum cost against a lease of the budget before forwarding it; the calls with no room left are
// refused in Anthropic's own error shape, with a `policy_decision` frame of rule `budget`. Every
// forwarded stream is held open until all 50 calls were answered or forwarded, so they are all in
// flight together: the budget is never passed by more than the estimate error of those calls.
import Anthropic from "@anthropic-ai/sdk";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readModelRequest, routeOf } from "../../../collector/gateway/model/apis.ts";
import { maxCostOf } from "../../../collector/gateway/model/cost.ts";
import { runIdFor } from "../../../protocol/index.ts";
import { priceCall } from "../../../protocol/price.ts";
import { daemonUp, drained, enroll, eventually, newComputer, runDaemon, type Computer } from "../../support/e2e.ts";
import { anthropicStream, SSE_HEADERS, startUpstream, type Upstream, type UpstreamRequest } from "../../support/upstream.ts";
import { startWorker, type LocalWorker } from "../../support/worker.ts";

const AGENT = "budget-agent";
const MODEL = "claude-sonnet-4-6";
const CALLS = 50;
const USAGE = { input_tokens: 400, output_tokens: 300 };
const messages = (routeOf("POST", "/v1/messages") as { api: Parameters<typeof maxCostOf>[0] }).api;

let worker: LocalWorker;
let upstream: Upstream;
let release: () => void = () => {};
const released = new Promise<void>((r) => {
  release = r;
});
const machines: { computer: Computer; hostId: string; daemon: ReturnType<typeof runDaemon>; secret: string }[] = [];

/** The call every session sends (its prompt padded so each call's maximum cost is the same). */
const request = (i: number) => ({
  model: MODEL,
  max_tokens: 1000,
  messages: [{ role: "user" as const, content: `call ${String(i).padStart(3, "0")}: ${"x".repeat(1200)}` }],
});
const maxCost = maxCostOf(messages, readModelRequest(messages, Buffer.from(JSON.stringify({ ...request(0), stream: true }))), new Date())!;
const realCost = priceCall("anthropic", MODEL, USAGE, new Date())!;
// Room for about 15 calls' maximum cost.
const LIMIT = Math.round(maxCost * 15.5);

const policy = {
  mode: "enforce",
  tools: [],
  default_tool_decision: "none",
  models: null,
  budgets: [{ id: "daily", scope: "workspace", window: "day", limit_microusd: LIMIT }],
  retention: { mode: "digest_only", keep: [] },
};

beforeAll(async () => {
  upstream = await startUpstream((req: UpstreamRequest) => ({
    headers: SSE_HEADERS,
    chunks: [],
    later: {
      wait: released,
      chunks: anthropicStream({
        id: `msg_${String(req.body.messages[0].content).slice(5, 8)}_${upstream.seen.length}`,
        model: MODEL,
        text: "ok",
        start: { input_tokens: USAGE.input_tokens, output_tokens: 1 },
        deltas: [{ output_tokens: USAGE.output_tokens }],
      }),
    },
  }));
  worker = await startWorker();
  const put = await worker.api(`/v1/workspaces/${worker.workspace}/policy`, { method: "PUT", body: JSON.stringify(policy) });
  expect(put.status).toBe(200);
  for (let i = 0; i < 3; i++) {
    // A loaded machine's wrangler dev can take longer than a lease's 5 s timeout, after which the gateway fails open
    // (docs/collector.md): this test is about the reservations, so it waits for every lease answer.
    const computer = await newComputer({
      OXAGEN_GATEWAY_ANTHROPIC_URL: upstream.url,
      OXAGEN_STATUS_INTERVAL_MS: "200",
      OXAGEN_LEASE_TIMEOUT_MS: "120000",
    });
    const { hostId } = await enroll(worker, computer);
    const secret = (JSON.parse(readFileSync(join(computer.env.OXAGEN_HOME!, "host.json"), "utf8")) as { hook_secret: string }).hook_secret;
    machines.push({ computer, hostId, daemon: runDaemon(computer), secret });
  }
  for (const m of machines) {
    await daemonUp(m.computer);
    // The recorder holds the workspace's policy (with its budget), and its gateway listens, before the first call.
    await eventually(async () => {
      const s = JSON.parse(readFileSync(join(m.computer.env.OXAGEN_HOME!, "recorder-status.json"), "utf8")) as {
        policy_etag: string | null;
        gateway: { listening: string };
      };
      return s.policy_etag !== null && s.gateway.listening === "listening";
    }, "the recorder's policy and gateway");
  }
}, 300_000);

afterAll(async () => {
  release();
  for (const m of machines) m.daemon.proc.kill("SIGTERM");
  await Promise.all(machines.map((m) => m.daemon.exited));
  await worker?.stop();
  await upstream?.close();
});

interface Outcome {
  machine: number;
  session: string;
  forwarded: boolean;
  status?: number;
  error?: unknown;
}

describe("budget reservations at the gateway, three computers, one budget", () => {
  it("forwards the calls the budget holds, refuses the rest as Anthropic refuses a spend limit, and never passes the budget by more than the in-flight calls' estimate error", async () => {
    // Two sessions per computer: several runs, each with its own lease, drawing on one workspace budget.
    const calls = Array.from({ length: CALLS }, (_, i) => {
      const machine = i % 3;
      const m = machines[machine]!;
      const session = `s-${machine}-${i % 2}`;
      const client = new Anthropic({
        apiKey: "sk-ant-test",
        baseURL: `http://127.0.0.1:${m.computer.gatewayPort}`,
        maxRetries: 0,
        defaultHeaders: { "x-oxagen-hook-secret": m.secret, "x-oxagen-agent": AGENT, "x-oxagen-session-id": session },
      });
      return (async (): Promise<Outcome> => {
        try {
          const stream = await client.messages.create({ ...request(i), stream: true });
          let text = "";
          for await (const e of stream) if (e.type === "content_block_delta" && e.delta.type === "text_delta") text += e.delta.text;
          expect(text).toBe("ok");
          return { machine, session, forwarded: true };
        } catch (error) {
          return { machine, session, forwarded: false, status: (error as { status?: number }).status, error };
        }
      })();
    });
    // Every call is either refused or at the upstream, its stream open, before any stream ends.
    let refusedSoFar = 0;
    const counted = calls.map((c) =>
      c.then((o) => {
        if (!o.forwarded) refusedSoFar++;
        return o;
      }),
    );
    await eventually(async () => upstream.seen.length + refusedSoFar === CALLS, "every call forwarded or refused", 120_000);
    const inFlight = upstream.seen.length;
    release();
    const outcomes = await Promise.all(counted);
    const forwarded = outcomes.filter((o) => o.forwarded);
    const refused = outcomes.filter((o) => !o.forwarded);
    expect(forwarded.length).toBe(inFlight);
    expect(forwarded.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    // Every call was reserved or refused by the server's answer: none went through unreserved (fail open).
    for (const m of machines) expect(m.daemon.log()).not.toContain("calls go through unreserved");
    // All forwarded calls were in flight at once, each holding its maximum cost: together no more than the budget.
    const reservations = upstream.seen.map((r) => maxCostOf(messages, readModelRequest(messages, r.raw), new Date())!);
    expect(reservations.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(LIMIT);
    // And usable to the limit: what the forwarded calls reserved is within one call's maximum per computer of it
    // (no budget left stuck in other runs' slices while calls are refused).
    expect(reservations.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(LIMIT - machines.length * maxCost);
    // Refused in Anthropic's shape for a spend limit: 400 invalid_request_error, the reason in the message.
    for (const o of refused) {
      // A refusal without a status is a connection failure: say what it was.
      expect(o.status, String(o.error)).toBe(400);
      const body = (o.error as { error?: { type: string; error: { type: string; message: string } } }).error;
      expect(body?.error.type).toBe("invalid_request_error");
      // Refused by its gateway's lease (no room for this call), or, once a lease filled the budget, by the
      // exhaustion the server pushed to every computer: both are the budget.
      expect(body?.error.message).toMatch(
        /^Oxagen refused this model call: (the budget daily \(\$\d+\.\d{4}\) has no room left for this call \(\$\d+\.\d{4} is spent, \$\d+\.\d{4} is reserved by calls in flight, \$\d+\.\d{4} is left\)|budget exhausted: daily allows .* is reserved by calls in flight)/,
      );
    }

    // Once every computer shipped its frames: the server priced each forwarded call once.
    for (const m of machines) await drained(m.computer);
    // D1's spend rows are a projection of the runs' objects: a few seconds behind the shipping.
    type Spend = { rows: { microusd: number; calls: number }[] };
    const spentCalls = (x: Spend) => x.rows.reduce((a, r) => a + r.calls, 0);
    const spend = await eventually(async () => {
      const x = (await (await worker.api("/v1/spend")).json()) as Spend;
      return spentCalls(x) >= forwarded.length ? x : null;
    }, "every forwarded call's spend in D1");
    const total = spend.rows.reduce((a, r) => a + r.microusd, 0);
    expect(spentCalls(spend)).toBe(forwarded.length);
    expect(total).toBe(forwarded.length * realCost);
    // The bound: what the in-flight calls cost beyond what each reserved (0 here, each cost less than its maximum).
    const estimateError = reservations.reduce((a, max) => a + Math.max(0, realCost - max), 0);
    expect(total).toBeLessThanOrEqual(LIMIT + estimateError);

    // Each refusal is on its run's chain as a policy_decision of rule budget; each forwarded call as one llm_call.
    const sessions = [...new Set(outcomes.map((o) => `${o.machine}/${o.session}`))];
    let decisions = 0;
    let llmCalls = 0;
    for (const key of sessions) {
      const [machine, session] = key.split("/") as [string, string];
      const run = runIdFor(machines[Number(machine)]!.hostId, AGENT, session);
      const res = await worker.api(`/v1/runs/${run}/frames?limit=1000`);
      const frames = ((await res.json()) as { frames: { kind: string; payload: unknown }[] }).frames;
      for (const f of frames) {
        const p = (typeof f.payload === "string" ? JSON.parse(f.payload) : f.payload) as Record<string, unknown>;
        if (f.kind === "policy_decision") {
          expect(p).toMatchObject({ path: "gateway", subject: "model", decision: "deny", rule: "budget", model: MODEL });
          decisions++;
        }
        if (f.kind === "llm_call") llmCalls++;
      }
    }
    expect(decisions).toBe(refused.length);
    expect(llmCalls).toBe(forwarded.length);
  }, 300_000);
});
