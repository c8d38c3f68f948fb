import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseLock, runIdFor, verifyChain } from "../../protocol/index.ts";
import {
  agentEvent,
  HOST,
  makeHome,
  payloads,
  postHook,
  readJournal,
  sendLine,
  startDaemon,
  type DaemonProc,
} from "../support/recorder.ts";

const running: DaemonProc[] = [];
afterEach(async () => {
  for (const d of running.splice(0)) {
    d.proc.kill("SIGKILL");
    await d.exited;
  }
});

const SECRET = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";

describe("recorder: hook events become frames", () => {
  it("records the custom agent's six events in coverage order, answers from the signed policy, and final-locks", async () => {
    const home = await makeHome({
      policy: { tools: [{ id: "no-rm", tool: "run_shell", command: "rm *", decision: "deny", reason: "no deletes" }] },
    });
    const d = await startDaemon(home);
    running.push(d);
    const s = { session_id: "my-run-42" };
    const send = (event: Record<string, unknown>) => agentEvent(home.port, "my-agent", { ...s, ...event });

    expect((await send({ hook_event_name: "SessionStart", cwd: "/work" })).answer).toEqual({});
    await send({ hook_event_name: "UserPromptSubmit", prompt: `fix the failing test; token ${SECRET}` });
    const allow = await send({
      hook_event_name: "PreToolUse",
      tool_name: "run_shell",
      tool_input: { command: "pytest -x" },
      tool_use_id: "call-1",
    });
    expect(allow.answer).toMatchObject({ hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow" } });
    await send({
      hook_event_name: "PostToolUse",
      tool_name: "run_shell",
      tool_use_id: "call-1",
      tool_input: { command: "pytest -x" },
      tool_response: { exit_code: 0 },
    });
    const deny = await send({
      hook_event_name: "PreToolUse",
      tool_name: "run_shell",
      tool_input: { command: "rm -rf /" },
      tool_use_id: "call-2",
    });
    expect(deny.answer).toEqual({
      hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "no deletes" },
    });
    await send({
      hook_event_name: "PostToolUse",
      tool_name: "Read",
      tool_use_id: "call-3",
      tool_input: { file_path: "/work/a.py" },
      tool_response: "x = 1",
    });
    await send({
      hook_event_name: "PostToolUse",
      tool_name: "WebFetch",
      tool_use_id: "call-4",
      tool_input: { url: "https://example.com/docs?q=1" },
      tool_response: "ok",
    });
    await send({ hook_event_name: "Stop", last_assistant_message: "All three tests pass now." });
    await send({ hook_event_name: "SessionEnd", reason: "other" });

    const chain = runIdFor(HOST, "my-agent", "my-run-42");
    const view = readJournal(home).get(chain)!;
    expect(view.run).toEqual({ harness: "my-agent", agent: "my-agent", session_id: "my-run-42" });
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
      "file_io",
      "tool_call",
      "network",
      "turn_end",
      "agent_stop",
    ]);
    const p = payloads(view);
    expect(p[1]).toMatchObject({ redactions: [{ role: "prompt", kind: "anthropic_api_key" }], bodies: [{ role: "prompt", kept: true }] });
    expect(p[2]).toMatchObject({ subject: "tool", decision: "allow", mode: "enforce", tool_name: "run_shell" });
    expect(p[4]).toMatchObject({ status: "ok", exit_code: 0, tool_use_id: "call-1" });
    expect(p[5]).toMatchObject({ program: "pytest" });
    expect(p[6]).toMatchObject({ decision: "deny", rule: "no-rm" });
    expect(p[9]).toMatchObject({ op: "read", file: "/work/a.py" });
    expect(p[11]).toMatchObject({ host: "example.com" });
    expect(p[13]).toMatchObject({ reason: "other", outcome: "completed" });
    const final = view.locks.map(parseLock).at(-1)!;
    expect(final).toMatchObject({ final: true, count: view.frames.length, head: view.frames.at(-1)!.hash, host: HOST });
    // Credentials never reach the disk: the kept prompt body holds the redacted text.
    const bodies = readdirSync(join(home.dir, "journal/bodies")).map((n) => readFileSync(join(home.dir, "journal/bodies", n), "utf8"));
    expect(bodies.some((b) => b.includes("[REDACTED:anthropic_api_key]"))).toBe(true);
    expect(
      bodies
        .concat(
          readdirSync(join(home.dir, "journal"))
            .filter((n) => n.endsWith(".jsonl"))
            .map((n) => readFileSync(join(home.dir, "journal", n), "utf8")),
        )
        .some((b) => b.includes(SECRET)),
    ).toBe(false);
  });

  it("answers a repeated event id from memory without recording it twice", async () => {
    const home = await makeHome();
    const d = await startDaemon(home);
    running.push(d);
    const ev = {
      v: 1,
      id: "00000000000000aa",
      t: Date.now(),
      source: "command",
      harness: null,
      agent: "dup-agent",
      event: { session_id: "s1", hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command: "ls" } },
    };
    const a = await sendLine(home.port, ev);
    const b = await sendLine(home.port, ev);
    expect(b).toEqual(a);
    const view = readJournal(home).get(runIdFor(HOST, "dup-agent", "s1"))!;
    // No verified policy cached: refused, as tacho hook refuses offline.
    expect(view.frames.map((f) => f.kind)).toEqual(["policy_decision", "token_denied"]);
    expect(a.answer).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
  });

  it("takes Claude Code's HTTP hooks on the same port, refuses foreign Host and Origin, keeps digests only when the policy says so", async () => {
    const home = await makeHome({
      policy: { retention: { mode: "digest_only", keep: [] }, mode: "observe", default_tool_decision: "deny" },
    });
    const d = await startDaemon(home);
    running.push(d);
    const base = { session_id: "cc-1", transcript_path: "/tmp/t.jsonl", cwd: "/work", permission_mode: "default" };
    expect(
      (await postHook(home.port, { ...base, hook_event_name: "SessionStart", source: "startup", model: "claude-sonnet-4-5" })).body,
    ).toEqual({});
    const pre = await postHook(home.port, {
      ...base,
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_input: { command: "npm test" },
      tool_use_id: "toolu_1",
    });
    expect(pre.body).toMatchObject({ hookSpecificOutput: { permissionDecision: "allow" } });
    await postHook(home.port, { ...base, hook_event_name: "PermissionRequest", tool_name: "Bash", tool_input: { command: "npm test" } });
    await postHook(home.port, {
      ...base,
      hook_event_name: "PostToolUseFailure",
      tool_name: "Bash",
      tool_input: { command: "npm test" },
      tool_use_id: "toolu_1",
      error: "Exit code 1\nfailed",
    });
    await postHook(home.port, { ...base, hook_event_name: "SubagentStart", agent_id: "a1", agent_type: "Explore" });
    await postHook(home.port, {
      ...base,
      hook_event_name: "SubagentStop",
      agent_id: "a1",
      agent_type: "Explore",
      last_assistant_message: "done",
    });
    await postHook(home.port, {
      ...base,
      hook_event_name: "PermissionDenied",
      tool_name: "Write",
      tool_input: { file_path: "/etc/x" },
      tool_use_id: "toolu_2",
    });
    expect((await postHook(home.port, { ...base, hook_event_name: "Notification", message: "hi" })).body).toEqual({});
    expect((await postHook(home.port, { ...base, hook_event_name: "Stop" }, { host: "evil.example:80" })).status).toBe(403);
    expect((await postHook(home.port, { ...base, hook_event_name: "Stop" }, { origin: "http://evil.example" })).status).toBe(403);

    const chain = runIdFor(HOST, "claude-code", "cc-1");
    const view = readJournal(home).get(chain)!;
    expect(view.run).toEqual({ harness: "claude-code", agent: null, session_id: "cc-1" });
    expect(verifyChain(chain, view.frames).problems).toEqual([]);
    expect(view.frames.map((f) => f.kind)).toEqual([
      "agent_start",
      "policy_decision",
      "tool_requested",
      "approval_request",
      "tool_call",
      "command",
      "subagent_start",
      "subagent_stop",
      "harness_permission",
    ]);
    const p = payloads(view);
    expect(p[1]).toMatchObject({ decision: "deny", mode: "observe" });
    expect(p[2]).toMatchObject({ bodies: [{ role: "tool_input", kept: false, why: "digest_only" }] });
    expect(p[4]).toMatchObject({ status: "error", exit_code: 1 });
    expect(readdirSync(join(home.dir, "journal/bodies"))).toEqual([]);
    expect(existsSync(join(home.dir, "recorder.pid"))).toBe(true);
  });
});

describe("tacho daemon start | status | stop", () => {
  it("starts detached, answers status, stops gracefully (final status written, pid file removed)", async () => {
    const { spawnSync } = await import("node:child_process");
    const { NODE, TACHO } = await import("../support/recorder.ts");
    const home = await makeHome();
    const tacho = (...args: string[]) =>
      spawnSync(NODE, [TACHO, "daemon", ...args, "--json"], { env: { ...process.env, OXAGEN_HOME: home.dir }, encoding: "utf8" });
    const started = tacho("start");
    expect(started.status).toBe(0);
    const { pid } = JSON.parse(started.stdout) as { pid: number };
    const st = tacho("status");
    expect(st.status).toBe(0);
    expect(JSON.parse(st.stdout)).toMatchObject({ running: true, answering: true, pid, port: home.port });
    expect((await agentEvent(home.port, "d-agent", { session_id: "d1", hook_event_name: "SessionStart" })).answer).toEqual({});
    const stopped = tacho("stop");
    expect(stopped.status).toBe(0);
    expect(JSON.parse(stopped.stdout)).toMatchObject({ stopped: true, pid });
    expect(existsSync(join(home.dir, "recorder.pid"))).toBe(false);
    const status = JSON.parse(readFileSync(join(home.dir, "recorder-status.json"), "utf8"));
    expect(status).toMatchObject({ pid, sessions_open: 1 });
    expect(typeof status.stopped_ms).toBe("number");
    expect(tacho("status").status).toBe(3);
  });
});
