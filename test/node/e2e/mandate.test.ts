// End to end, against the real Worker: operator changes reach the recorder over the push
// connection, not a poll (both poll intervals are an hour here, so only a push can apply them);
// transcript model calls are priced on the server; a run budget refuses the run's next step.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runIdFor } from "../../../protocol/index.ts";
import { claudeSession, daemonUp, enroll, eventually, newComputer, runDaemon, stopAll, type Computer } from "../../support/e2e.ts";
import { startWorker, type LocalWorker } from "../../support/worker.ts";

let worker: LocalWorker;
let computer: Computer;
let hostId: string;
let daemon: ReturnType<typeof runDaemon> | undefined;

const AGENT = "mandate-agent";
const HOUR = "3600000";

interface Status {
  policy_etag: string;
  policy_fetches: number;
  push: { state: string; pushes: number; carried: number; connects: number };
}
const status = () => JSON.parse(readFileSync(join(computer.env.OXAGEN_HOME!, "recorder-status.json"), "utf8")) as Status;
const step = (session: string, event: string, extra: Record<string, unknown> = {}) =>
  computer.hook(["--agent", AGENT], { session_id: session, hook_event_name: event, ...extra });
const tool = (session: string) => step(session, "PreToolUse", { tool_name: "refund", tool_input: { order: 1 }, tool_use_id: "c" });
const denied = (a: Record<string, unknown>) =>
  (a.hookSpecificOutput as { permissionDecision?: string; permissionDecisionReason?: string } | undefined)?.permissionDecision === "deny"
    ? String((a.hookSpecificOutput as { permissionDecisionReason: string }).permissionDecisionReason)
    : null;
const post = (path: string, body: unknown = {}) => worker.api(path, { method: "POST", body: JSON.stringify(body) });
async function applied(res: Promise<Response>) {
  const r = await res;
  expect(r.status).toBe(200);
  return ((await r.json()) as { propagation: unknown }).propagation;
}
const everywhere = { hosts: 1, applied: 1, not_applied: [], more: 0 };

beforeAll(async () => {
  worker = await startWorker();
  computer = await newComputer({ OXAGEN_POLICY_INTERVAL_MS: HOUR, OXAGEN_PUSH_POLL_MS: HOUR, OXAGEN_STATUS_INTERVAL_MS: "200" });
  hostId = (await enroll(worker, computer, ["claude-code"])).hostId;
  daemon = runDaemon(computer);
  await daemonUp(computer);
  await eventually(async () => status().push.state === "connected", "the push connection");
}, 240_000);

afterAll(() => stopAll(daemon, worker));

describe("the mandate, live", () => {
  it("applies a run's pause and resume by push: the next tool call is refused, then allowed, with no poll in between", async () => {
    const session = "s-pause";
    const run = runIdFor(hostId, AGENT, session);
    step(session, "SessionStart");
    expect(denied(tool(session))).toBeNull();
    await eventually(async () => (await worker.api(`/v1/runs/${run}`)).ok, "the run on the server");
    const fetchesBefore = status().policy_fetches;
    const pushesBefore = status().push.pushes;
    const carriedBefore = status().push.carried;
    // Each call returns once the recorder applied it: the very next tool call sees it.
    expect(await applied(post(`/v1/runs/${run}/pause`))).toEqual(everywhere);
    expect(denied(tool(session))).toBe("this run is paused by an operator");
    expect(await applied(post(`/v1/runs/${run}/resume`))).toEqual(everywhere);
    expect(denied(tool(session))).toBeNull();
    // Two changes, two pushes, each carrying the host's signed policy: no fetch (the polls are an hour apart).
    // The counts come from recorder-status.json, written every 200 ms: wait for it to catch up.
    await eventually(async () => status().push.carried - carriedBefore >= 2, "the status file to count both pushes");
    expect(status().push.pushes - pushesBefore).toBe(2);
    expect(status().push.carried - carriedBefore).toBe(2);
    expect(status().policy_fetches - fetchesBefore).toBe(0);
  });

  it("pauses an agent across the workspace: its session start is stopped, its tools and prompts refused, until resumed", async () => {
    const s = "s-agent";
    step(s, "SessionStart");
    expect(await applied(post(`/v1/agents/${AGENT}/pause`))).toEqual(everywhere);
    expect(denied(tool(s))).toBe(`the agent ${AGENT} is paused by an operator`);
    expect(step("s-agent-2", "SessionStart")).toMatchObject({ continue: false, stopReason: `the agent ${AGENT} is paused by an operator` });
    expect(step(s, "UserPromptSubmit", { prompt: "refund it" })).toMatchObject({ decision: "block" });
    const list = (await (await worker.api("/v1/agents")).json()) as { agents: { name: string; paused: boolean }[] };
    expect(list.agents.find((a) => a.name === AGENT)).toMatchObject({ paused: true });
    expect(await applied(post(`/v1/agents/${AGENT}/resume`))).toEqual(everywhere);
    expect(denied(tool(s))).toBeNull();
  });

  it("prices a Claude Code run's transcript calls on the server, and refuses the run's next step once its budget is spent, until raised", async () => {
    const policy = (limit: number) => ({
      mode: "enforce",
      tools: [],
      default_tool_decision: "none",
      models: null,
      budgets: [{ id: "per-run", scope: "run", window: "run", limit_microusd: limit }],
      retention: { mode: "keep", keep: ["prompt"] },
    });
    expect(
      (await worker.api(`/v1/workspaces/${worker.workspace}/policy`, { method: "PUT", body: JSON.stringify(policy(4000)) })).status,
    ).toBe(200);
    const session = "s-spend";
    const run = runIdFor(hostId, "claude-code", session);
    const claude = claudeSession(computer, session, { model: "claude-sonnet-4-5", usage: { input_tokens: 1000, output_tokens: 100 } });
    const view = await eventually(async () => {
      const v = (await (await worker.api(`/v1/runs/${run}`)).json()) as { spend_microusd?: number; spend?: { by_model: unknown[] } };
      return v.spend_microusd ? v : null;
    }, "the run's spend");
    expect(view.spend_microusd).toBe(4500);
    expect(view.spend!.by_model).toEqual([
      expect.objectContaining({ model: "claude-sonnet-4-5", microusd: 4500, price_versions: ["genai-prices@0.1.8"] }),
    ]);
    const pre = () => claude("PreToolUse", { tool_name: "Bash", tool_input: { command: "ls" }, tool_use_id: "t1" });
    const reason = await eventually(async () => denied(pre()), "the budget refusal to reach the hook");
    expect(reason).toMatch(/^budget exhausted: per-run allows \$0\.0040 for the run in this run, and \$0\.0045 is spent/);
    expect(
      (await worker.api(`/v1/workspaces/${worker.workspace}/policy`, { method: "PUT", body: JSON.stringify(policy(1_000_000)) })).status,
    ).toBe(200);
    await eventually(async () => denied(pre()) === null, "the raised budget to reach the hook");
  });
});
