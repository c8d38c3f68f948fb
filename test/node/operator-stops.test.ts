// The operator's stops (a paused run, a paused agent, a suspended computer, an exhausted budget)
// decided by the one rule, protocol `stopOf` through collector/recorder/decide.ts: the recorder
// (online) and `tacho hook` with the recorder down (offline) give the same answer for each.
import { afterEach, describe, expect, it } from "vitest";
import { defaultPolicy, type Policy, runIdFor } from "../../protocol/index.ts";
import { decideEvent } from "../support/decide.ts";
import { agentEvent, HOST, makeHome, NODE, startDaemon, TACHO, type DaemonProc } from "../support/recorder.ts";
import { collect } from "./support/tacho.ts";

const running: DaemonProc[] = [];
afterEach(async () => {
  for (const d of running.splice(0)) {
    d.proc.kill("SIGKILL");
    await d.exited;
  }
});

const AGENT = "refunds";
const SESSION = "stop-s1";
const RUN = runIdFor(HOST, AGENT, SESSION);
const FAR = Date.now() + 86_400_000;
const budget = {
  budget: "daily",
  scope: "workspace" as const,
  window: "day" as const,
  until_ms: FAR,
  spent_microusd: 10_000_000,
  limit_microusd: 10_000_000,
};

const STOPS: [string, Partial<Policy>, RegExp][] = [
  ["paused run", { paused_runs: [RUN] }, /this run is paused by an operator/],
  ["paused agent", { paused_agents: [AGENT] }, /the agent refunds is paused by an operator/],
  ["suspended computer", { suspended_hosts: [HOST] }, /this computer is suspended/],
  ["exhausted budget", { exhausted_budgets: [budget] }, /^budget exhausted: daily allows \$10\.00 for the workspace in today \(UTC\)/],
];

const EVENTS = [
  { hook_event_name: "SessionStart", cwd: "/work" },
  { hook_event_name: "UserPromptSubmit", prompt: "refund order 42" },
  { hook_event_name: "PreToolUse", tool_name: "refund", tool_input: { order: 42 }, tool_use_id: "c1" },
];

/** What an answer decides, whichever field carries it. */
function decided(a: Record<string, unknown>): { refused: boolean; reason: string } {
  const out = a.hookSpecificOutput as { permissionDecision?: string; permissionDecisionReason?: string } | undefined;
  if (out?.permissionDecision) return { refused: out.permissionDecision === "deny", reason: out.permissionDecisionReason ?? "" };
  if (a.decision === "block") return { refused: true, reason: String(a.reason) };
  if (a.continue === false) return { refused: true, reason: String(a.stopReason) };
  return { refused: false, reason: "" };
}

async function offline(dir: string, event: Record<string, unknown>) {
  const r = await collect(
    NODE,
    [TACHO, "hook", "--agent", AGENT],
    { PATH: process.env.PATH ?? "", OXAGEN_HOME: dir },
    JSON.stringify({ session_id: SESSION, ...event }),
  );
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

describe("the operator's stops, online and offline", () => {
  for (const [what, change, reason] of STOPS) {
    it(`${what}: the same answers from the recorder and from tacho hook with the recorder down`, async () => {
      const home = await makeHome({ policy: change });
      const down = await Promise.all(EVENTS.map((e) => offline(home.dir, e)));
      const d = await startDaemon(home);
      running.push(d);
      const up: Record<string, unknown>[] = [];
      for (const e of EVENTS) up.push((await agentEvent(home, AGENT, { session_id: SESSION, ...e })).answer);
      const budgetStop = what === "exhausted budget";
      EVENTS.forEach((e, i) => {
        // A budget leaves the session start alone: the session is refused at its first prompt or tool.
        const refuses = !(budgetStop && e.hook_event_name === "SessionStart");
        for (const [path, answer] of [
          ["online", up[i]!],
          ["offline", down[i]!],
        ] as const) {
          const got = decided(answer);
          expect(got.refused, `${path} ${e.hook_event_name}`).toBe(refuses);
          if (refuses) expect(got.reason, `${path} ${e.hook_event_name}`).toMatch(reason);
        }
      });
      expect(down.every((a) => a.enforcement_tier === "client_attested")).toBe(true);
    });
  }

  it("an exhausted budget past its window, a budget of another run, or a pause of another agent stops nothing", () => {
    const policy = {
      ...defaultPolicy("ws", 0),
      paused_agents: ["someone-else"],
      exhausted_budgets: [
        { ...budget, until_ms: 1000 },
        { ...budget, scope: "run" as const, window: "run" as const, until_ms: null, run: runIdFor(HOST, AGENT, "other") },
      ],
    };
    for (const e of EVENTS) {
      const v = decideEvent(e, RUN, { hostId: HOST, policy: { policy, etag: "0".repeat(16) }, agent: AGENT, now: 2000 });
      expect(decided(v.answer).refused, e.hook_event_name).toBe(false);
    }
  });

  it("observe mode records a budget's refusal and answers nothing", () => {
    const policy = { ...defaultPolicy("ws", 0), mode: "observe" as const, exhausted_budgets: [budget] };
    const v = decideEvent(EVENTS[2]!, RUN, { hostId: HOST, policy: { policy, etag: "0".repeat(16) }, agent: AGENT });
    expect(v.answer).toEqual({});
    expect(v.record).toMatchObject({ decision: "deny", mode: "observe", rule: "budget" });
  });
});
