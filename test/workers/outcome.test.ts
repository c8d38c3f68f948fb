// A run's outcome as the server reads it from the frames: failed, paused, refused, budget
// exhausted, with the reason, in the API and the runs list; the record's own outcome unchanged.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { enrollHost, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
});

interface View {
  status: string;
  outcome: { value: string; reason: string };
  recorded_outcome: string | null;
  hostname: string | null;
  model_calls: number;
  model_calls_failed: number;
  duration_ms: number | null;
}
const view = async (chain: string) => (await (await op(token, `/v1/runs/${chain}`)).json()) as View;

const decision = (over: Record<string, unknown>) => ({ path: "hook", subject: "tool", decision: "deny", mode: "enforce", ...over });
const gatewayError = (code: string, status: number) => ({ path: "gateway", code, forwarded: false, status, vendor: "anthropic" });

describe("a run's derived outcome", () => {
  it("says a run whose every model call failed failed, with the last failure's reason, though the session ended as completed", async () => {
    const run = new TestRun(host);
    run.start();
    run.add("error", gatewayError("upstream_unreachable", 502));
    run.llm({ status: 502, usage: { input_tokens: 0, output_tokens: 0 } });
    run.add("error", gatewayError("upstream_unreachable", 502));
    run.stop();
    await ingest(host, [run.part()]);
    const v = await view(run.chain);
    expect(v).toMatchObject({ status: "ended", recorded_outcome: "completed", model_calls: 3, model_calls_failed: 3, hostname: "box" });
    expect(v.outcome).toEqual({
      value: "failed",
      reason: "all 3 of the run's model calls failed; the last: the gateway could not reach the vendor, answering 502; not forwarded",
    });
    expect(v.duration_ms).toBe(run.frames.at(-1)!.t - run.frames[0]!.t);
  });

  it("keeps a run with one good model call among failed ones completed", async () => {
    const run = new TestRun(host);
    run.start();
    run.llm({ status: 502, usage: { input_tokens: 0, output_tokens: 0 } });
    run.llm();
    run.stop();
    await ingest(host, [run.part()]);
    expect((await view(run.chain)).outcome.value).toBe("completed");
  });

  it("says paused by an operator while every step since the pause was refused, and completed once a step went through again", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    run.add("policy_decision", decision({ rule: "paused_run", reason: "this run is paused by an operator", tool_name: "Bash" }));
    run.add("token_denied", { path: "hook", tool_name: "Bash", input: { sha256: "0".repeat(64), size: 1 }, reason: "paused" });
    await ingest(host, [run.part()]);
    expect((await view(run.chain)).outcome).toEqual({ value: "paused", reason: "this run is paused by an operator" });
    const sent = run.frames.length;
    run.stop();
    await ingest(host, [run.part(run.frames.slice(sent))]);
    // The session ended while paused: still paused, whatever the agent_stop says.
    expect(await view(run.chain)).toMatchObject({ status: "ended", recorded_outcome: "completed", outcome: { value: "paused" } });

    const resumed = new TestRun(host);
    resumed.start();
    resumed.add("policy_decision", decision({ rule: "paused_agent", reason: "the agent claude-code is paused by an operator" }));
    resumed.add("policy_decision", decision({ decision: "none", rule: "default", reason: "no clause decides Bash" }));
    resumed.tool();
    resumed.stop();
    await ingest(host, [resumed.part()]);
    expect((await view(resumed.chain)).outcome.value).toBe("completed");
  });

  it("says refused for a refused prompt (its own turn_start is not a step that went through), budget_exhausted for a budget refusal", async () => {
    const prompt = new TestRun(host);
    prompt.start();
    prompt.add("policy_decision", decision({ subject: "prompt", rule: "no_session", reason: "no usable session_id" }));
    prompt.add("turn_start", { path: "hook", prompt: { sha256: "0".repeat(64), size: 5 } });
    prompt.stop();
    await ingest(host, [prompt.part()]);
    expect((await view(prompt.chain)).outcome).toEqual({ value: "refused", reason: "the prompt was refused: no usable session_id" });

    const budget = new TestRun(host);
    budget.start();
    budget.llm();
    const why = "budget exhausted: daily allows $0.0045 for the workspace in today (UTC), and $0.0045 is spent";
    budget.add("policy_decision", {
      path: "gateway",
      subject: "model",
      decision: "deny",
      mode: "enforce",
      rule: "budget",
      reason: why,
      model: "m",
    });
    await ingest(host, [budget.part()]);
    expect(await view(budget.chain)).toMatchObject({ status: "live", outcome: { value: "budget_exhausted", reason: why } });
  });

  it("does not take a refusal recorded in observe mode, or a tool clause's deny, for a stopped run", async () => {
    const run = new TestRun(host);
    run.start();
    run.add("policy_decision", decision({ mode: "observe", rule: "paused_run", reason: "would be paused" }));
    run.add("policy_decision", decision({ rule: "no-rm", reason: "no rm" }));
    run.stop();
    await ingest(host, [run.part()]);
    expect((await view(run.chain)).outcome.value).toBe("completed");
  });

  it("reads a chain stored before outcomes were derived from its frames, once", async () => {
    const run = new TestRun(host);
    run.start();
    run.add("error", gatewayError("request_too_large", 413));
    await ingest(host, [run.part()]);
    const stub = env.CHAINS.get(env.CHAINS.idFromName(run.chain));
    await runInDurableObject(stub, (_o, state) => {
      state.storage.sql.exec("DELETE FROM reading");
    });
    const summary = await stub.summary();
    expect(summary?.derived).toEqual({
      value: "failed",
      reason: "the run's one model call failed; the last: the request was over the gateway's size limit, answering 413; not forwarded",
    });
    await runInDurableObject(stub, (_o, state) => {
      expect(state.storage.sql.exec("SELECT count(*) AS n FROM reading").one().n).toBe(1);
    });
  });

  it("lists each run's outcome, computer name, duration and model calls in the runs list", async () => {
    const run = new TestRun(host);
    run.start();
    run.add("error", gatewayError("upstream_unreachable", 502));
    run.stop();
    await ingest(host, [run.part()]);
    const list = (await (await op(token, `/v1/runs?host=${host.id}&limit=200`)).json()) as { runs: (View & { id: string })[] };
    expect(list.runs.find((r) => r.id === run.chain)).toMatchObject({
      hostname: "box",
      outcome: { value: "failed" },
      model_calls: 1,
      model_calls_failed: 1,
      duration_ms: 2000,
    });
  });
});
