// The refund agent against the real Worker and a real recorder: every step in the record, an
// operator's pause denying the next refund before it reaches the payments API, resume, a budget
// refusal, and failing closed when tacho does not answer.
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runIdFor } from "../../protocol/index.ts";
import {
  claudeSession,
  daemonUp,
  drained,
  enroll,
  eventually,
  newComputer,
  runDaemon,
  stopAll,
  type Computer,
} from "../../test/support/e2e.ts";
import { NODE, TACHO } from "../../test/support/recorder.ts";
import { startWorker, type LocalWorker } from "../../test/support/worker.ts";
import { RefundAgent } from "./agent.ts";
import { type Payments, startPayments } from "./payments.ts";

let worker: LocalWorker;
let computer: Computer;
let hostId: string;
let payments: Payments;
let daemon: ReturnType<typeof runDaemon> | undefined;

beforeAll(async () => {
  [worker, payments] = await Promise.all([startWorker(), startPayments()]);
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
  const a = new RefundAgent({ payments: payments.url, session, tacho, env: computer.env });
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
    a.end();
    await drained(computer);
    const frames = await eventually(async () => {
      const page = (await (await worker.api(`/v1/runs/${run}/frames`)).json()) as { frames?: { kind: string; payload: string }[] };
      return page.frames?.some((f) => f.kind === "agent_stop") ? page.frames : null;
    }, "the run's record");
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
    expect(JSON.parse(steps[4]!.payload)).toMatchObject({ path: "hook", tool_name: "issue_refund", status: "ok" });
  });

  it("stops at an operator's pause: the next refund is denied before it reaches the payments API, and goes through after resume", async () => {
    const { agent: a } = agent();
    a.start();
    expect((await a.handle(refund("B-1"))).status).toBe("refunded");
    const before = payments.refunds.length;
    // The pause returns once the computer's recorder applied it: the very next refund is refused.
    expect(await applied(post("/v1/agents/refunds/pause"))).toEqual(everywhere);
    expect(await a.handle(refund("B-2"))).toEqual({ status: "refused", reason: "the agent refunds is paused by an operator" });
    expect(payments.refunds.length).toBe(before);
    expect(payments.refunds.some((r) => r.order === "B-2")).toBe(false);
    expect(await applied(post("/v1/agents/refunds/resume"))).toEqual(everywhere);
    expect((await a.handle(refund("B-3"))).status).toBe("refunded");
    expect(payments.refunds.at(-1)).toMatchObject({ order: "B-3" });
    a.end();
  });

  it("is refused once the workspace's daily model budget is spent, and refunds again once it is raised", async () => {
    const policy = (limit: number) =>
      JSON.stringify({
        mode: "enforce",
        tools: [],
        default_tool_decision: "none",
        models: null,
        budgets: [{ id: "daily-models", scope: "workspace", window: "day", limit_microusd: limit }],
        retention: { mode: "keep", keep: ["prompt", "tool_input", "tool_output"] },
      });
    const put = (limit: number) => worker.api(`/v1/workspaces/${worker.workspace}/policy`, { method: "PUT", body: policy(limit) });
    expect(await applied(put(4500))).toEqual(everywhere);
    // Another agent on the computer spends the day's budget: one Claude Code call priced at $0.0045.
    claudeSession(computer, "budget-spender", { model: "claude-sonnet-4-5", usage: { input_tokens: 1000, output_tokens: 100 } });
    const { agent: a } = agent();
    a.start();
    const before = payments.refunds.length;
    await eventually(async () => {
      const use = (await (await worker.api("/v1/spend/budgets")).json()) as { clauses: { uses: { spent_microusd: number }[] }[] };
      return (use.clauses[0]?.uses[0]?.spent_microusd ?? 0) >= 4500;
    }, "the spend on the server");
    // The batch that spent the budget is answered once every connected recorder applied the
    // exhaustion; once the recorder holds nothing unacknowledged, the next refund is refused.
    await drained(computer);
    const refused = await a.handle(refund("C-1"));
    if (refused.status !== "refused") throw new Error(`the refund went through: ${JSON.stringify(refused)}`);
    expect(refused.reason).toMatch(
      /^budget exhausted: daily-models allows \$0\.0045 for the workspace in today \(UTC\), and \$[\d.,]+ is spent/,
    );
    expect(payments.refunds.length).toBe(before);
    expect(await applied(put(1_000_000))).toEqual(everywhere);
    expect((await a.handle(refund("C-2"))).status).toBe("refunded");
    a.end();
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
});
