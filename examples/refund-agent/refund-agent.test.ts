// The refund agent against the real Worker and a real recorder: the payments API is the
// workspace's Oxagen tool issue_refund, called through the recorder's gateway, its key only in the
// workspace. Every step in the record; the clause's amount cap, an operator's pause and an
// exhausted tool budget each refusing a refund before the payments API sees it; resume; failing
// closed when tacho does not answer; the key in nothing the agent or the record holds.
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runIdFor } from "../../protocol/index.ts";
import {
  daemonUp,
  drained,
  enroll,
  eventually,
  filesText,
  newComputer,
  runDaemon,
  stopAll,
  type Computer,
} from "../../test/support/e2e.ts";
import { NODE, TACHO } from "../../test/support/recorder.ts";
import { startWorker, type LocalWorker } from "../../test/support/worker.ts";
import { gatewayOf, REFUND_TOOL, RefundAgent } from "./agent.ts";
import { type Payments, startPayments } from "./payments.ts";

/** The payments API's key: the workspace's tool holds it, nothing else does. */
const KEY = "sk_live_refunds_51QzExampleKeyNeverOnTheComputer";

let worker: LocalWorker;
let computer: Computer;
let hostId: string;
let payments: Payments;
let daemon: ReturnType<typeof runDaemon> | undefined;

beforeAll(async () => {
  [worker, payments] = await Promise.all([startWorker(), startPayments(KEY)]);
  // The operator's tool: the payments API with its key, refunds of at most $50.00 for this agent.
  const tool = {
    name: REFUND_TOOL,
    description: "Refunds an order, in cents.",
    input_schema: {
      type: "object",
      properties: { order: { type: "string" }, amount_cents: { type: "integer", minimum: 1 } },
      required: ["order", "amount_cents"],
    },
    binding: { kind: "http", method: "POST", origin: payments.url, path: "/v1/refunds" },
    credential: KEY,
    access: [{ id: "refund-cap", decision: "allow", agents: ["refunds"], arguments: { amount_cents: { maximum: 5000 } } }],
  };
  const made = await worker.api("/v1/tools", { method: "POST", body: JSON.stringify(tool) });
  if (made.status !== 201) throw new Error(`tool: ${made.status} ${await made.text()}`);
  computer = await newComputer();
  hostId = (await enroll(worker, computer, ["claude-code"])).hostId;
  daemon = runDaemon(computer);
  await daemonUp(computer);
}, 240_000);

afterAll(async () => {
  await payments?.close();
  await stopAll(daemon, worker);
});

afterEach(async () => {
  await worker.api("/v1/agents/refunds/resume", { method: "POST", body: "{}" });
});

let sessions = 0;
/** A refund agent whose tacho runs on the test's enrolled computer. */
function agent(tacho = [NODE, TACHO]) {
  const session = `refund-run-${++sessions}`;
  const a = new RefundAgent({ gateway: gatewayOf(computer.env), session, tacho, env: computer.env });
  return { session, run: runIdFor(hostId, "refunds", session), agent: a };
}
const refund = (order: string) => ({ order, amount_cents: 1299, message: `Please refund order ${order}, it arrived broken.` });
const post = (path: string, body: unknown = {}) => worker.api(path, { method: "POST", body: JSON.stringify(body) });
/** An operator change's answer, with how far it had reached the computers when it returned. */
async function applied(res: Promise<Response>) {
  const r = await res;
  expect(r.status).toBe(200);
  return ((await r.json()) as { propagation: unknown }).propagation;
}
/** The computer's recorder applied the change before the call returned. */
const everywhere = { hosts: 1, applied: 1, not_applied: [], more: 0 };

describe("the refund agent", () => {
  it("sends every step through tacho: the run's record holds each one", async () => {
    const { agent: a, run } = agent();
    a.start();
    expect(await a.handle(refund("A-1"))).toEqual({ status: "refunded", refund_id: expect.stringMatching(/^re_/) });
    await a.end();
    await drained(computer);
    const frames = await eventually(async () => {
      const page = (await (await worker.api(`/v1/runs/${run}/frames`)).json()) as { frames?: { kind: string; payload: string }[] };
      return page.frames?.some((f) => f.kind === "agent_stop") ? page.frames : null;
    }, "the run's record");
    const row = ((await (await worker.api(`/v1/tool-calls?run=${run}`)).json()) as { calls: Record<string, unknown>[] }).calls[0]!;
    // The agent runs in a git worktree (this repo), so the recorder also notes its changed paths.
    const steps = frames.filter((f) => f.kind !== "oxagen:worktree_reconciled");
    expect(steps.map((f) => f.kind)).toEqual([
      "agent_start",
      "turn_start",
      "policy_decision",
      "tool_requested",
      "tool_call",
      "turn_end",
      "agent_stop",
    ]);
    // The call is the gateway's frame, with the meter row's id and input hash; the hook's PostToolUse is the same call.
    expect(JSON.parse(steps[4]!.payload)).toMatchObject({
      path: "gateway",
      tool_name: REFUND_TOOL,
      server: "oxagen",
      status: "ok",
      tool_use_id: "call-1",
      call_id: row.id,
      input: { sha256: row.input_sha256 },
    });
    expect(JSON.parse(steps[3]!.payload)).toMatchObject({ path: "hook", tool_name: "mcp__oxagen__issue_refund", tool_use_id: "call-1" });
  });

  it("refuses a refund over the clause's cap at the server, before the payments API sees it; the model-readable reason comes back", async () => {
    const { agent: a, run } = agent();
    a.start();
    const before = payments.refunds.length;
    const over = await a.handle({ ...refund("E-1"), amount_cents: 9000 });
    expect(over).toEqual({ status: "refused", reason: expect.stringMatching(/^Oxagen refused this call \(refund-cap\): /) });
    expect(payments.refunds.length).toBe(before);
    expect((await a.handle({ ...refund("E-2"), amount_cents: 5000 })).status).toBe("refunded");
    await a.end();
    await drained(computer);
    const frames = await eventually(async () => {
      const page = (await (await worker.api(`/v1/runs/${run}/frames`)).json()) as { frames?: { kind: string; payload: string }[] };
      return page.frames?.some((f) => f.kind === "agent_stop") ? page.frames : null;
    }, "the run's record");
    const refusal = frames.map((f) => JSON.parse(f.payload) as Record<string, unknown>).find((p) => p.subject === "oxagen_tool");
    expect(refusal).toMatchObject({ path: "gateway", decision: "deny", rule: "refund-cap", tool_use_id: "call-1" });
    expect(refusal?.reason).toBeUndefined();
  });

  it("stops at an operator's pause: the next refund is denied before it reaches the payments API, and goes through after resume", async () => {
    const { agent: a } = agent();
    a.start();
    expect((await a.handle(refund("B-1"))).status).toBe("refunded");
    const before = payments.refunds.length;
    // The pause returns once the computer's recorder applied it: the very next refund is refused.
    expect(await applied(post("/v1/agents/refunds/pause"))).toEqual(everywhere);
    expect(await a.handle(refund("B-2"))).toEqual({ status: "refused", reason: "the agent refunds is paused by an operator" });
    // An agent that skipped its hook is refused by the workspace's server all the same.
    const g = gatewayOf(computer.env);
    const direct = new Client({ name: "skips-its-hook", version: "1" });
    await direct.connect(
      new StreamableHTTPClientTransport(new URL(g.url), {
        requestInit: { headers: { "x-oxagen-hook-secret": g.secret, "x-oxagen-agent": "refunds", "x-oxagen-session-id": "no-hook-run" } },
      }),
    );
    const skipped = (await direct.callTool({ name: REFUND_TOOL, arguments: { order: "B-2b", amount_cents: 100 } })) as {
      isError?: boolean;
      _meta?: Record<string, { rule?: string }>;
    };
    await direct.close();
    expect(skipped.isError).toBe(true);
    expect(skipped._meta?.["io.oxagen/decision"]?.rule).toBe("paused_agent");
    expect(payments.refunds.length).toBe(before);
    expect(payments.refunds.some((r) => r.order === "B-2")).toBe(false);
    expect(await applied(post("/v1/agents/refunds/resume"))).toEqual(everywhere);
    expect((await a.handle(refund("B-3"))).status).toBe("refunded");
    expect(payments.refunds.at(-1)).toMatchObject({ order: "B-3" });
    await a.end();
  });

  it("is refused once the tool's spend would pass the workspace's budget, before the payments API sees it, and refunds again once it is raised", async () => {
    const policy = (limit: number) =>
      JSON.stringify({
        mode: "enforce",
        tools: [],
        default_tool_decision: "none",
        models: null,
        budgets: [{ id: "refund-spend", scope: "workspace", window: "day", limit_microusd: limit }],
        retention: { mode: "keep", keep: ["prompt", "tool_input", "tool_output"] },
      });
    const put = (limit: number) => worker.api(`/v1/workspaces/${worker.workspace}/policy`, { method: "PUT", body: policy(limit) });
    // Each refund now costs $1 of the workspace's tool budget, which has room for one more.
    const patched = await worker.api(`/v1/tools/${REFUND_TOOL}`, { method: "PATCH", body: JSON.stringify({ cost_microusd: 1_000_000 }) });
    expect(patched.status).toBe(200);
    expect(await applied(put(1_500_000))).toEqual(everywhere);
    const { agent: a } = agent();
    a.start();
    const before = payments.refunds.length;
    expect((await a.handle(refund("C-1"))).status).toBe("refunded");
    const refused = await a.handle(refund("C-2"));
    if (refused.status !== "refused") throw new Error(`the refund went through: ${JSON.stringify(refused)}`);
    expect(refused.reason).toMatch(/^Oxagen refused this call \(budget\): .*refund-spend/);
    expect(payments.refunds.length).toBe(before + 1);
    expect(await applied(put(1_000_000_000))).toEqual(everywhere);
    expect((await a.handle(refund("C-3"))).status).toBe("refunded");
    await a.end();
    await worker.api(`/v1/tools/${REFUND_TOOL}`, { method: "PATCH", body: JSON.stringify({ cost_microusd: 0 }) });
  });

  it("fails closed when tacho does not answer: the refund is not issued", async () => {
    const before = payments.refunds.length;
    const { agent: a } = agent([NODE, join(import.meta.dirname, "no-such-tacho.js")]);
    expect(await a.handle(refund("D-1"))).toMatchObject({
      status: "refused",
      reason: expect.stringMatching(/^fails closed: tacho exited/),
    });
    expect(payments.refunds.length).toBe(before);
  });

  it("holds no key: the payments API's key is in nothing the agent was given, answered or recorded", async () => {
    // Every refund reached the payments API with the key (the server put it there): none was refused for it.
    expect(payments.unauthorized).toBe(0);
    expect(payments.refunds.length).toBeGreaterThan(0);
    const runs = ((await (await worker.api("/v1/runs?agent=refunds")).json()) as { runs: { id: string }[] }).runs;
    expect(runs.length).toBeGreaterThan(0);
    const record: string[] = [];
    for (const r of runs) record.push(await (await worker.api(`/v1/runs/${r.id}/export`)).text());
    record.push(await (await worker.api("/v1/tool-calls")).text(), await (await worker.api(`/v1/tools/${REFUND_TOOL}`)).text());
    expect(JSON.stringify(gatewayOf(computer.env))).not.toContain(KEY);
    expect(record.join("\n")).not.toContain(KEY);
    expect(filesText(computer.home)).not.toContain(KEY);
  });
});
