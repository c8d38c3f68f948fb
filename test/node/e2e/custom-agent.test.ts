// End to end: the real Worker under wrangler dev, the real tacho/oxagen processes.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { daemonUp, stopAll, drained, enroll, eventually, newComputer, oxagen, runDaemon, type Computer } from "../../support/e2e.ts";
import { startWorker, type LocalWorker } from "../../support/worker.ts";

interface RunView {
  status: string;
  frame_count: number;
  lock_count: number;
  gap_count: number;
  gaps: { kind: string }[];
  tier: { value: string };
  grade: { value: string };
}

let worker: LocalWorker;
let computer: Computer;
let hostId: string;
let daemon: ReturnType<typeof runDaemon>;

async function run(id: string): Promise<RunView | null> {
  const res = await worker.api(`/v1/runs/${id}`);
  return res.status === 200 ? ((await res.json()) as RunView) : null;
}

async function kinds(id: string): Promise<string[]> {
  const res = await worker.api(`/v1/runs/${id}/frames?limit=1000`);
  return ((await res.json()) as { frames: { kind: string }[] }).frames.map((f) => f.kind);
}

async function runIdOf(session: string, agent: string): Promise<string> {
  const { runIdFor } = await import("../../../protocol/index.ts");
  return runIdFor(hostId, agent, session);
}

beforeAll(async () => {
  worker = await startWorker();
  computer = await newComputer();
  hostId = (await enroll(worker, computer)).hostId;
  const policy = await worker.api(`/v1/workspaces/${worker.workspace}/policy`, {
    method: "PUT",
    body: JSON.stringify({
      mode: "enforce",
      tools: [
        {
          id: "no-refunds-over-100",
          tool: "stripe_refund",
          command: "*amount=5000*",
          decision: "deny",
          reason: "refunds over $100 need a person",
        },
      ],
      default_tool_decision: "allow",
      models: null,
      budgets: [],
      retention: { mode: "keep", keep: ["prompt", "tool_input", "tool_output", "message", "llm_request", "llm_response", "error"] },
    }),
  });
  expect(policy.status).toBe(200);
  daemon = runDaemon(computer);
  await daemonUp(computer);
}, 240_000);

afterAll(() => stopAll(daemon, worker));

describe("a custom agent wrapped with tacho hook, end to end", () => {
  it("runs the six-event sequence, a policy deny stops the tool, and the exported bundle verifies", async () => {
    const session = "refund-run-1";
    const who = ["--agent", "stripe-refunds"];
    const ran: string[] = [];
    const tool = (id: string, amount: number) => {
      const answer = computer.hook(who, {
        session_id: session,
        hook_event_name: "PreToolUse",
        tool_name: "stripe_refund",
        tool_input: { command: `refund charge=ch_${id} amount=${amount}` },
        tool_use_id: id,
      });
      const decision = (answer.hookSpecificOutput as { permissionDecision: string }).permissionDecision;
      if (decision === "deny") return answer;
      ran.push(id);
      computer.hook(who, {
        session_id: session,
        hook_event_name: "PostToolUse",
        tool_name: "stripe_refund",
        tool_input: { command: `refund charge=ch_${id} amount=${amount}` },
        tool_use_id: id,
        tool_response: { exit_code: 0, refund: `re_${id}` },
      });
      return answer;
    };
    expect(computer.hook(who, { session_id: session, hook_event_name: "SessionStart", cwd: computer.home })).toEqual({});
    expect(
      computer.hook(who, {
        session_id: session,
        hook_event_name: "UserPromptSubmit",
        prompt: "refund the two duplicate charges",
        extra_field: { kept: true },
      }),
    ).toEqual({});
    tool("call-1", 1200);
    const denied = tool("call-2", 5000);
    expect(denied.hookSpecificOutput).toMatchObject({
      permissionDecision: "deny",
      permissionDecisionReason: "refunds over $100 need a person",
    });
    expect(ran).toEqual(["call-1"]);
    computer.hook(who, {
      session_id: session,
      hook_event_name: "Stop",
      last_assistant_message: "Refunded one charge; the other needs approval.",
    });
    computer.hook(who, { session_id: session, hook_event_name: "SessionEnd", reason: "done" });

    const id = await runIdOf(session, "stripe-refunds");
    await drained(computer);
    const ended = await eventually(async () => {
      const r = await run(id);
      return r && r.status === "ended" && r.lock_count > 0 && r.gap_count === 0 ? r : null;
    }, "the run to end on the server with no gaps");
    expect(await kinds(id)).toEqual([
      "agent_start",
      "turn_start",
      "policy_decision",
      "tool_requested",
      "tool_call",
      "command",
      "policy_decision",
      "token_denied",
      "turn_end",
      "agent_stop",
    ]);
    expect(ended.tier.value).toBe("harness");

    const exported = await worker.api(`/v1/runs/${id}/export`);
    expect(exported.status).toBe(200);
    const bundle = join(computer.home, "bundle.jsonl");
    writeFileSync(bundle, await exported.text());
    const keys = (await (await fetch(`${worker.url}/v1/keys`)).json()) as { keys: { pub: string }[] };
    const verified = oxagen(computer, ["verify", bundle, "--server-key", keys.keys[0]!.pub, "--json"]);
    expect(JSON.parse(verified.stdout), verified.stdout).toMatchObject({ exit: 0, result: "valid" });
    expect(verified.status).toBe(0);

    const status = computer.tacho(["status", "--json"]);
    expect(status.status).toBe(0);
    const view = (JSON.parse(status.stdout) as { server_view: { agents: { name: string; health: string }[] } }).server_view;
    expect(view.agents.find((a) => a.name === "stripe-refunds")).toMatchObject({ health: "healthy" });
  }, 120_000);

  it("refuses a reserved agent name with one JSON answer and exit 0, recording nothing", async () => {
    const r = computer.tacho(
      ["hook", "--agent", "claude-code"],
      JSON.stringify({ session_id: "x", hook_event_name: "PreToolUse", tool_name: "t" }),
    );
    expect(r.status).toBe(0);
    const answer = JSON.parse(r.stdout);
    expect(answer.hookSpecificOutput.permissionDecision).toBe("deny");
    expect(await run(await runIdOf("x", "claude-code"))).toBeNull();
  });
});

describe("when parts go down", () => {
  const who = ["--agent", "ci-bot"];
  const step = (session: string, i: number) => {
    const input = { command: `echo step-${i}` };
    const pre = computer.hook(who, {
      session_id: session,
      hook_event_name: "PreToolUse",
      tool_name: "run_shell",
      tool_input: input,
      tool_use_id: `c${i}`,
    });
    computer.hook(who, {
      session_id: session,
      hook_event_name: "PostToolUse",
      tool_name: "run_shell",
      tool_input: input,
      tool_use_id: `c${i}`,
      tool_response: { exit_code: 0 },
    });
    return pre;
  };
  const toolCalls = async (id: string) => (await kinds(id)).filter((k) => k === "tool_call").length;

  it("recorder down: decisions come from the cached policy, steps are spooled, and the replay lands with a daemon_down gap", async () => {
    const session = "offline-1";
    computer.hook(who, { session_id: session, hook_event_name: "SessionStart" });
    step(session, 0);
    daemon.proc.kill("SIGTERM");
    await daemon.exited;
    const offline = step(session, 1);
    expect(offline).toMatchObject({ enforcement_tier: "client_attested", hookSpecificOutput: { permissionDecision: "allow" } });
    const refused = computer.hook(who, {
      session_id: session,
      hook_event_name: "PreToolUse",
      tool_name: "stripe_refund",
      tool_input: { command: "refund amount=5000" },
      tool_use_id: "r1",
    });
    expect(refused).toMatchObject({ enforcement_tier: "client_attested", hookSpecificOutput: { permissionDecision: "deny" } });
    step(session, 2);
    daemon = runDaemon(computer);
    await daemonUp(computer);
    computer.hook(who, { session_id: session, hook_event_name: "SessionEnd" });
    const since = Date.now();
    await drained(computer, since);
    const id = await runIdOf(session, "ci-bot");
    const view = await eventually(async () => {
      const r = await run(id);
      return r && r.status === "ended" ? r : null;
    }, "the offline run to end");
    expect(view.gaps.map((g) => g.kind)).toContain("daemon_down");
    expect(await toolCalls(id)).toBe(3);
    expect((await kinds(id)).filter((k) => k === "token_denied")).toHaveLength(1);
  }, 120_000);

  it("kill -9 of the recorder in the middle of a stream loses nothing and duplicates nothing on the server", async () => {
    const session = "crash-1";
    computer.hook(who, { session_id: session, hook_event_name: "SessionStart" });
    for (let i = 0; i < 30; i++) {
      if (i === 12) daemon.proc.kill("SIGKILL");
      if (i === 20) {
        await daemon.exited;
        daemon = runDaemon(computer);
        await daemonUp(computer);
      }
      step(session, i);
    }
    computer.hook(who, { session_id: session, hook_event_name: "SessionEnd" });
    await drained(computer, Date.now());
    const id = await runIdOf(session, "ci-bot");
    await eventually(async () => (await run(id))?.status === "ended", "the crashed-recorder run to end");
    expect(await toolCalls(id)).toBe(30);
    const ids = (
      (await (await worker.api(`/v1/runs/${id}/frames?limit=1000`)).json()) as { frames: { kind: string; payload: string }[] }
    ).frames
      .filter((f) => f.kind === "tool_call")
      .map((f) => (JSON.parse(f.payload) as { tool_use_id: string }).tool_use_id);
    expect(new Set(ids).size).toBe(30);
  }, 180_000);

  it("server down for a while: the recorder keeps answering and delivers everything once it is back", async () => {
    const session = "outage-1";
    await worker.stop();
    computer.hook(who, { session_id: session, hook_event_name: "SessionStart" });
    for (let i = 0; i < 10; i++) expect(step(session, i)).toMatchObject({ hookSpecificOutput: { permissionDecision: "allow" } });
    computer.hook(who, { session_id: session, hook_event_name: "SessionEnd" });
    await new Promise((r) => setTimeout(r, 3000));
    await worker.restart();
    await drained(computer, Date.now(), 120_000);
    const id = await runIdOf(session, "ci-bot");
    const view = await eventually(async () => {
      const r = await run(id);
      return r && r.status === "ended" && r.gap_count === 0 ? r : null;
    }, "the outage run to arrive whole");
    expect(view.frame_count).toBe(1 + 10 * 4 + 1);
  }, 240_000);
});
