// The one decision rule (collector/recorder/decide.ts) and what each harness is told
// (docs/collector.md, "Decisions"): no clause, no decision; allow only when a clause says so.
import { describe, expect, it } from "vitest";
import { answerOf, askBecomes } from "../../collector/harnesses/events.ts";
import { cutOversize } from "../../collector/recorder/bodies.ts";
import { type CachedPolicy, toldOf } from "../../collector/recorder/decide.ts";
import { defaultPolicy, type Policy } from "../../protocol/index.ts";
import { decideEvent } from "../support/decide.ts";

const HOST = "h-dec-1";
const RUN = "run_00000000000000000000000000000000";

function cached(change: Partial<Policy> = {}): CachedPolicy {
  return {
    etag: "0123456789abcdef",
    policy: {
      ...defaultPolicy("ws", 0),
      tools: [
        { id: "no-rm", tool: "*", command: "rm *", decision: "deny", reason: "no deletes" },
        { id: "ls-ok", tool: "*", command: "ls*", decision: "allow", reason: "listing is fine" },
        { id: "push-asks", tool: "*", command: "git push*", decision: "ask", reason: "pushes need a person" },
      ],
      ...change,
    },
  };
}

const tool = (command: string) => ({ hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command }, tool_use_id: "t" });

/** The answer each harness prints for a canonical PreToolUse decision (Cursor's event is camelCase). */
function shapes(command: string, policy = cached()) {
  const out: Record<string, unknown> = {};
  for (const harness of [null, "claude-code", "codex", "cursor", "stella"]) {
    const event = harness === "cursor" ? { ...tool(command), cursor_event: "preToolUse" } : tool(command);
    const v = decideEvent(event, RUN, { hostId: HOST, policy, ask: askBecomes(harness) });
    const told = toldOf(v.record);
    out[harness ?? "custom"] = answerOf(harness, event, told.decision, told.reason);
  }
  return out;
}

describe("a tool call no clause decides (issue 9: the default allow skipped Claude Code's own prompt)", () => {
  it("gets no decision in every harness (Cursor's failClosed veto point needs its pass-through allow)", () => {
    expect(shapes("make")).toEqual({ custom: {}, "claude-code": {}, codex: {}, cursor: { permission: "allow" }, stella: {} });
    expect(decideEvent(tool("make"), RUN, { hostId: HOST, policy: cached() }).record).toMatchObject({
      decision: "none",
      mode: "enforce",
      rule: "default",
    });
  });

  it("an explicit allow clause is answered allow where the harness has one (Codex ignores it, Stella treats it as none)", () => {
    const allow = {
      hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow", permissionDecisionReason: "listing is fine" },
    };
    expect(shapes("ls -la")).toEqual({
      custom: allow,
      "claude-code": allow,
      codex: {},
      cursor: { permission: "allow" },
      stella: { action: "allow" },
    });
  });

  it("deny and ask: ask stays ask where the harness can ask a person, and is a refusal where it cannot", () => {
    const denied = shapes("rm -rf /");
    expect(denied.codex).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
    expect(denied.cursor).toMatchObject({ permission: "deny" });
    expect(denied.stella).toEqual({ action: "deny", reason: "no deletes" });
    const asked = shapes("git push origin main");
    expect(asked["claude-code"]).toMatchObject({ hookSpecificOutput: { permissionDecision: "ask" } });
    expect(asked.stella).toEqual({ action: "require_approval", reason: "pushes need a person" });
    expect(asked.codex).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
    expect(asked.cursor).toMatchObject({ permission: "deny" });
  });

  it("an older cached policy's explicit default is still what it says", () => {
    for (const d of ["allow", "deny", "ask"] as const) {
      const v = decideEvent(tool("make"), RUN, { hostId: HOST, policy: cached({ default_tool_decision: d }) });
      expect(v.record).toMatchObject({ decision: d, rule: "default" });
      expect(v.answer).toMatchObject({ hookSpecificOutput: { permissionDecision: d } });
    }
  });

  it("observe mode records what the policy would decide and answers nothing, also for prompts of a paused run", () => {
    const observe = cached({ mode: "observe", paused_runs: [RUN] });
    expect(shapes("rm -rf /", observe)).toEqual({ custom: {}, "claude-code": {}, codex: {}, cursor: { permission: "allow" }, stella: {} });
    const prompt = decideEvent({ hook_event_name: "UserPromptSubmit", prompt: "x" }, RUN, { hostId: HOST, policy: observe });
    expect(prompt).toEqual({ answer: {}, record: expect.objectContaining({ subject: "prompt", decision: "deny", mode: "observe" }) });
  });
});

describe("what is refused whatever the clauses say", () => {
  it("no usable session: refused at every veto point, nothing decided elsewhere", () => {
    const ctx = { hostId: HOST, policy: cached() };
    expect(decideEvent(tool("ls"), null, ctx).answer).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
    expect(decideEvent({ hook_event_name: "UserPromptSubmit" }, null, ctx).answer).toMatchObject({ decision: "block" });
    expect(decideEvent({ hook_event_name: "SessionStart" }, null, ctx).answer).toMatchObject({ continue: false });
    expect(decideEvent({ hook_event_name: "PermissionRequest" }, null, ctx).answer).toMatchObject({
      hookSpecificOutput: { decision: { behavior: "deny" } },
    });
    expect(decideEvent({ hook_event_name: "Stop" }, null, ctx)).toMatchObject({ answer: {}, record: null });
  });

  it("no verified policy refuses tools only; a suspended computer refuses prompts and session starts; a cut input cannot be checked", () => {
    expect(decideEvent(tool("ls"), RUN, { hostId: HOST, policy: null }).record).toMatchObject({ decision: "deny", rule: "no_policy" });
    expect(decideEvent({ hook_event_name: "UserPromptSubmit" }, RUN, { hostId: HOST, policy: null }).answer).toEqual({});
    const suspended = cached({ suspended_hosts: [HOST] });
    expect(decideEvent({ hook_event_name: "SessionStart" }, RUN, { hostId: HOST, policy: suspended }).answer).toMatchObject({
      continue: false,
    });
    const cut = { ...tool("ls"), tool_input: cutOversize({ command: "ls", blob: "x".repeat(100) }) };
    expect(decideEvent(cut, RUN, { hostId: HOST, policy: cached() }).record).toMatchObject({ decision: "deny", rule: "oversize" });
  });
});
