// Realistic Codex, Cursor and Stella payloads (reference notes §2–§4) replayed through the
// entries `tacho enroll` wrote, with the real recorder; frames checked against "By harness".
import { afterEach, describe, expect, it } from "vitest";
import { runIdFor, verifyChain } from "../../protocol/index.ts";
import { HOST, payloads, readJournal, startDaemon, type DaemonProc } from "../support/recorder.ts";
import { fire, harnessHome } from "./support/harness-replay.ts";

const running: DaemonProc[] = [];
afterEach(async () => {
  for (const d of running.splice(0)) {
    d.proc.kill("SIGKILL");
    await d.exited;
  }
});

describe("Codex end to end", () => {
  it("records every step but the harness's own refusal, answers only Codex's fields, refuses what asks a person", async () => {
    const h = await harnessHome(["codex"]);
    running.push(await startDaemon(h));
    const base = {
      session_id: "019a7c2e-5f1b-7e42-9d3c-2b8f6a1c0e44",
      transcript_path: null,
      cwd: "/work/app",
      model: "gpt-5-codex",
      permission_mode: "default",
    };
    const go = (event: string, p: Record<string, unknown>) => fire(h, "codex", event, { ...base, hook_event_name: event, ...p });

    expect(await go("SessionStart", { source: "startup" })).toEqual({});
    expect(await go("UserPromptSubmit", { turn_id: "t1", prompt: "run the tests and push" })).toEqual({});
    expect(
      await go("PreToolUse", { turn_id: "t1", tool_name: "Bash", tool_use_id: "call_1", tool_input: { command: "npm test" } }),
    ).toEqual({});
    expect(
      await go("PermissionRequest", { turn_id: "t1", tool_name: "Bash", tool_input: { command: "npm test", description: "run tests" } }),
    ).toEqual({});
    expect(
      await go("PostToolUse", {
        turn_id: "t1",
        tool_name: "Bash",
        tool_use_id: "call_1",
        tool_input: { command: "npm test" },
        tool_response: { exit_code: 0, output: "ok" },
      }),
    ).toEqual({});
    expect(
      await go("PreToolUse", { turn_id: "t1", tool_name: "Bash", tool_use_id: "call_2", tool_input: { command: "rm -rf build" } }),
    ).toEqual({
      hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "no deletes" },
    });
    const ask = await go("PreToolUse", {
      turn_id: "t1",
      tool_name: "Bash",
      tool_use_id: "call_3",
      tool_input: { command: "git push origin main" },
    });
    expect(Object.keys(ask)).toEqual(["hookSpecificOutput"]);
    expect(Object.keys(ask.hookSpecificOutput).sort()).toEqual(["hookEventName", "permissionDecision", "permissionDecisionReason"]);
    expect(ask.hookSpecificOutput).toMatchObject({
      permissionDecision: "deny",
      permissionDecisionReason: expect.stringContaining("pushes need a person"),
    });
    expect(await go("SubagentStart", { turn_id: "t1", agent_id: "sub-1", agent_type: "explorer" })).toEqual({});
    expect(
      await go("SubagentStop", { turn_id: "t1", agent_id: "sub-1", agent_type: "explorer", last_assistant_message: "found it" }),
    ).toEqual({});
    expect(await go("Stop", { turn_id: "t1", stop_hook_active: false, last_assistant_message: "Tests pass; push refused." })).toEqual({});
    expect(await go("SessionEnd", { reason: "other" })).toEqual({});

    const chain = runIdFor(HOST, "codex", base.session_id);
    const view = readJournal(h).get(chain)!;
    expect(verifyChain(chain, view.frames).problems).toEqual([]);
    expect(view.frames.map((f) => f.kind)).toEqual([
      "agent_start",
      "turn_start",
      "policy_decision",
      "tool_requested",
      "approval_request",
      "tool_call",
      "command",
      "policy_decision",
      "token_denied",
      "policy_decision",
      "token_denied",
      "subagent_start",
      "subagent_stop",
      "turn_end",
      "agent_stop",
    ]);
    const p = payloads(view);
    expect(p[0]).toMatchObject({ harness: "codex", model: "gpt-5-codex", source: "startup" });
    expect(p[1]).toMatchObject({ turn_id: "t1" });
    expect(p[9]).toMatchObject({ decision: "deny", rule: "ask-push", reason: expect.stringContaining("cannot ask") });
    expect(p[14]).toMatchObject({ outcome: "completed" });
    expect(view.frames.some((f) => f.kind === "harness_permission")).toBe(false);
    expect(view.locks.length).toBeGreaterThan(0);
  });

  it("fallbacks keep Codex's shape: not enrolled, unreadable stdin, recorder down (offline decision, no extra fields)", async () => {
    const h = await harnessHome(["codex"]);
    const pre = {
      session_id: "s-off",
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_use_id: "c1",
      tool_input: { command: "rm -rf /" },
      cwd: "/w",
      model: "m",
      permission_mode: "default",
      turn_id: "t",
      transcript_path: null,
    };
    const down = await fire(h, "codex", "PreToolUse", pre, { TACHO_HOOK_TIMEOUT_MS: "300" });
    expect(down).toEqual({
      hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "no deletes" },
    });
    expect(await fire(h, "codex", "Stop", { ...pre, hook_event_name: "Stop" }, { TACHO_HOOK_TIMEOUT_MS: "300" })).toEqual({});
    const lost = await fire(h, "codex", "PreToolUse", pre, { OXAGEN_HOME: "/nonexistent-oxagen" });
    expect(Object.keys(lost)).toEqual(["hookSpecificOutput"]);
    expect(lost.hookSpecificOutput).toMatchObject({
      permissionDecision: "deny",
      permissionDecisionReason: expect.stringContaining("not enrolled"),
    });
  });
});

describe("Cursor end to end", () => {
  it("records every step but approval and refusal, never an llm_call; always a decision at veto points; ask becomes deny", async () => {
    const h = await harnessHome(["cursor", "claude-code"]);
    running.push(await startDaemon(h));
    const conv = "614ce89f-2a7e-4c1b-9d0e-3f5a6b7c8d90";
    const common = {
      conversation_id: conv,
      generation_id: "gen-1",
      model: "default",
      cursor_version: "3.9.16",
      workspace_roots: ["/work/app"],
      user_email: "dev@example.com",
      transcript_path: null,
    };
    const go = (event: string, p: Record<string, unknown>) => fire(h, "cursor", event, { ...common, hook_event_name: event, ...p });

    expect(await go("sessionStart", { session_id: conv, generation_id: "", is_background_agent: false, composer_mode: "agent" })).toEqual(
      {},
    );
    expect(await go("beforeSubmitPrompt", { prompt: "clean the build and push", attachments: [] })).toEqual({ continue: true });
    expect(
      await go("preToolUse", {
        tool_name: "Shell",
        tool_input: { command: "npm run build", cwd: "/work/app", timeout: 30000 },
        tool_use_id: "5b2f6c1e-0d3a-4e8b-9f7a-1c2d3e4f5a6b",
        cwd: "/work/app",
      }),
    ).toEqual({ permission: "allow" });
    expect(
      await go("postToolUse", {
        tool_name: "Shell",
        tool_input: { command: "npm run build" },
        tool_output: JSON.stringify({ output: "built", exitCode: 0 }),
        tool_use_id: "5b2f6c1e-0d3a-4e8b-9f7a-1c2d3e4f5a6b",
        cwd: "/work/app",
        duration: 812.4,
      }),
    ).toEqual({});
    const ask = await go("preToolUse", {
      tool_name: "Shell",
      tool_input: { command: "git push origin main" },
      tool_use_id: "u-2",
      cwd: "/work/app",
    });
    expect(ask).toEqual({
      permission: "deny",
      user_message: expect.stringContaining("pushes need a person"),
      agent_message: expect.stringContaining("pushes need a person"),
    });
    expect(
      await go("postToolUseFailure", {
        tool_name: "Shell",
        tool_input: { command: "git push origin main" },
        tool_use_id: "u-2",
        cwd: "/work/app",
        error_message: "denied by hook",
        failure_type: "permission_denied",
        duration: 3,
        is_interrupt: false,
      }),
    ).toEqual({});
    expect(
      await go("subagentStart", {
        subagent_id: "sa-1",
        subagent_type: "explore",
        task: "find flaky tests",
        parent_conversation_id: conv,
        tool_call_id: "tc-1",
        subagent_model: "default",
        is_parallel_worker: false,
      }),
    ).toEqual({ permission: "allow" });
    expect(
      await go("subagentStop", {
        subagent_type: "explore",
        status: "completed",
        task: "find flaky tests",
        description: "d",
        duration_ms: 1200,
        message_count: 3,
        tool_call_count: 1,
        loop_count: 0,
        agent_transcript_path: "/t",
      }),
    ).toEqual({});
    expect(
      await go("afterAgentResponse", { text: "Build is clean; the push was refused by policy.", input_tokens: 31527, output_tokens: 615 }),
    ).toEqual({});
    expect(
      await go("stop", {
        status: "completed",
        loop_count: 0,
        input_tokens: 31527,
        output_tokens: 615,
        cache_read_tokens: 22112,
        cache_write_tokens: 0,
      }),
    ).toEqual({});
    // The same step through Cursor's "third-party hooks" (the Claude-format entry) is not recorded twice.
    expect(
      await fire(h, "claude-code", "PreToolUse", {
        ...common,
        session_id: conv,
        hook_event_name: "PreToolUse",
        tool_name: "Shell",
        tool_input: { command: "ls" },
      }),
    ).toEqual({});
    expect(
      await go("sessionEnd", {
        session_id: conv,
        reason: "completed",
        duration_ms: 60000,
        is_background_agent: false,
        final_status: "completed",
      }),
    ).toEqual({});

    const chain = runIdFor(HOST, "cursor", conv);
    const view = readJournal(h).get(chain)!;
    expect(verifyChain(chain, view.frames).problems).toEqual([]);
    expect(view.frames.map((f) => f.kind)).toEqual([
      "agent_start",
      "turn_start",
      "policy_decision",
      "tool_requested",
      "tool_call",
      "command",
      "policy_decision",
      "token_denied",
      "tool_call",
      "command",
      "subagent_start",
      "subagent_stop",
      "turn_end",
      "agent_stop",
    ]);
    const p = payloads(view);
    expect(p[0]).toMatchObject({ harness: "cursor", session_id: conv, cwd: "/work/app", source: "agent" });
    expect(p[4]).toMatchObject({ status: "ok", exit_code: 0, duration_ms: 812 });
    expect(p[6]).toMatchObject({ decision: "deny", rule: "ask-push" });
    expect(p[8]).toMatchObject({ status: "error" });
    expect(p[10]).toMatchObject({ agent_id: "sa-1", agent_type: "explore" });
    expect(p[12]).toMatchObject({
      message: { size: "Build is clean; the push was refused by policy.".length },
      usage: { input_tokens: 31527, output_tokens: 615, cache_read_tokens: 22112, cache_write_tokens: 0 },
    });
    expect(readJournal(h).has(runIdFor(HOST, "claude-code", conv))).toBe(false);
  });

  it("fallbacks always print a decision at the veto points (not enrolled, bad input, recorder down)", async () => {
    const h = await harnessHome(["cursor"]);
    const nowhere = { OXAGEN_HOME: "/nonexistent-oxagen" };
    const pre = { conversation_id: "c", hook_event_name: "preToolUse", tool_name: "Shell", tool_input: { command: "ls" } };
    expect(await fire(h, "cursor", "preToolUse", pre, nowhere)).toMatchObject({
      permission: "deny",
      user_message: expect.stringContaining("not enrolled"),
    });
    expect(
      await fire(h, "cursor", "beforeSubmitPrompt", { conversation_id: "c", hook_event_name: "beforeSubmitPrompt", prompt: "x" }, nowhere),
    ).toMatchObject({ continue: false });
    expect(await fire(h, "cursor", "subagentStart", { conversation_id: "c", hook_event_name: "subagentStart" }, nowhere)).toMatchObject({
      permission: "deny",
    });
    const { sh, writtenCommand } = await import("./support/harness-replay.ts");
    const bad = await sh(writtenCommand(h, "cursor", "preToolUse"), "not json", h.env);
    expect(JSON.parse(bad.stdout)).toMatchObject({ permission: "deny", continue: false });
    // Recorder down: decided from the cached policy, still Cursor's shape.
    expect(await fire(h, "cursor", "preToolUse", pre, { TACHO_HOOK_TIMEOUT_MS: "300" })).toEqual({ permission: "allow" });
    expect(
      await fire(h, "cursor", "preToolUse", { ...pre, tool_input: { command: "rm -rf /" } }, { TACHO_HOOK_TIMEOUT_MS: "300" }),
    ).toEqual({ permission: "deny", user_message: "no deletes", agent_message: "no deletes" });
    expect(
      await fire(
        h,
        "cursor",
        "beforeSubmitPrompt",
        { conversation_id: "c", hook_event_name: "beforeSubmitPrompt", prompt: "x" },
        { TACHO_HOOK_TIMEOUT_MS: "300" },
      ),
    ).toEqual({ continue: true });
  });
});
