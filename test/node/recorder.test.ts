import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseLock, runIdFor, verifyChain } from "../../protocol/index.ts";
import {
  agentEvent,
  HOST,
  makeHome,
  NODE,
  payloads,
  postHook,
  readJournal,
  sendLine,
  startDaemon,
  TACHO,
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
    const send = (event: Record<string, unknown>) => agentEvent(home, "my-agent", { ...s, ...event });

    expect((await send({ hook_event_name: "SessionStart", cwd: "/work" })).answer).toEqual({});
    await send({ hook_event_name: "UserPromptSubmit", prompt: `fix the failing test; token ${SECRET}` });
    const allow = await send({
      hook_event_name: "PreToolUse",
      tool_name: "run_shell",
      tool_input: { command: "pytest -x" },
      tool_use_id: "call-1",
    });
    // No clause decides pytest and the policy's default gives no decision: the harness's own flow decides.
    expect(allow.answer).toEqual({});
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
    expect(p[2]).toMatchObject({ subject: "tool", decision: "none", mode: "enforce", rule: "default", tool_name: "run_shell" });
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
    const a = await sendLine(home, ev);
    const b = await sendLine(home, ev);
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
      (await postHook(home, { ...base, hook_event_name: "SessionStart", source: "startup", model: "claude-sonnet-4-5" })).body,
    ).toEqual({});
    const pre = await postHook(home, {
      ...base,
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_input: { command: "npm test" },
      tool_use_id: "toolu_1",
    });
    // Observe mode records the would-be denial and answers nothing: Claude Code's own flow decides.
    expect(pre.body).toEqual({});
    await postHook(home, { ...base, hook_event_name: "PermissionRequest", tool_name: "Bash", tool_input: { command: "npm test" } });
    await postHook(home, {
      ...base,
      hook_event_name: "PostToolUseFailure",
      tool_name: "Bash",
      tool_input: { command: "npm test" },
      tool_use_id: "toolu_1",
      error: "Exit code 1\nfailed",
    });
    await postHook(home, { ...base, hook_event_name: "SubagentStart", agent_id: "a1", agent_type: "Explore" });
    await postHook(home, {
      ...base,
      hook_event_name: "SubagentStop",
      agent_id: "a1",
      agent_type: "Explore",
      last_assistant_message: "done",
    });
    await postHook(home, {
      ...base,
      hook_event_name: "PermissionDenied",
      tool_name: "Write",
      tool_input: { file_path: "/etc/x" },
      tool_use_id: "toolu_2",
    });
    expect((await postHook(home, { ...base, hook_event_name: "Notification", message: "hi" })).body).toEqual({});
    expect((await postHook(home, { ...base, hook_event_name: "Stop" }, { host: "evil.example:80" })).status).toBe(403);
    expect((await postHook(home, { ...base, hook_event_name: "Stop" }, { origin: "http://evil.example" })).status).toBe(403);

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
    expect((await agentEvent(home, "d-agent", { session_id: "d1", hook_event_name: "SessionStart" })).answer).toEqual({});
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

describe("the record states what the hook reported, never a placeholder", () => {
  const hookOnce = (home: { dir: string }, payload: Record<string, unknown>) => {
    const r = spawnSync(NODE, [TACHO, "hook", "--agent", "big-agent"], {
      env: { PATH: process.env.PATH ?? "", OXAGEN_HOME: home.dir },
      input: JSON.stringify(payload),
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(r.status).toBe(0);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  const sha = (text: string) => createHash("sha256").update(text).digest("hex");

  it("a 5 MiB prompt and a 5 MiB tool input: the real size and SHA-256 of the real bytes, not kept (over_limit)", async () => {
    const home = await makeHome({ policy: {} });
    running.push(await startDaemon(home));
    const prompt = `fix this: ${"p".repeat(5 * 1024 * 1024)}`;
    const input = { file_path: "/work/big.txt", content: "c".repeat(5 * 1024 * 1024) };
    const s = { session_id: "big-1" };
    hookOnce(home, { ...s, hook_event_name: "UserPromptSubmit", prompt });
    const pre = hookOnce(home, { ...s, hook_event_name: "PreToolUse", tool_name: "Write", tool_input: input, tool_use_id: "w1" });
    expect(pre).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
    hookOnce(home, { ...s, hook_event_name: "PostToolUse", tool_name: "Write", tool_input: input, tool_use_id: "w1", tool_response: "ok" });
    const view = readJournal(home).get(runIdFor(HOST, "big-agent", "big-1"))!;
    expect(view.frames.map((f) => f.kind)).toEqual(["turn_start", "policy_decision", "token_denied", "tool_call", "file_io"]);
    const p = payloads(view);
    expect(p[0]).toMatchObject({
      prompt: { sha256: sha(prompt), size: prompt.length },
      bodies: [{ role: "prompt", sha256: sha(prompt), size: prompt.length, kept: false, why: "over_limit" }],
    });
    const inputBytes = JSON.stringify(input);
    expect(p[1]).toMatchObject({ decision: "deny", rule: "oversize" });
    expect(p[2]).toMatchObject({ input: { sha256: sha(inputBytes), size: inputBytes.length } });
    expect(p[3]).toMatchObject({ input: { sha256: sha(inputBytes), size: inputBytes.length }, output: { sha256: sha("ok"), size: 2 } });
    expect(p[4]).toMatchObject({ op: "write", file: "/work/big.txt" });
  });

  it('a PostToolUse without tool_input takes the input its PreToolUse named, or names none (no program "null")', async () => {
    const home = await makeHome({ policy: {} });
    running.push(await startDaemon(home));
    const send = (event: Record<string, unknown>) => agentEvent(home, "post-agent", { session_id: "post-1", ...event });
    await send({ hook_event_name: "PreToolUse", tool_name: "run_shell", tool_input: { command: "pytest -x" }, tool_use_id: "c1" });
    await send({ hook_event_name: "PostToolUse", tool_name: "run_shell", tool_use_id: "c1", tool_response: { exit_code: 0 } });
    await send({ hook_event_name: "PostToolUse", tool_name: "run_shell", tool_use_id: "c2", tool_response: { exit_code: 0 } });
    const view = readJournal(home).get(runIdFor(HOST, "post-agent", "post-1"))!;
    expect(view.frames.map((f) => f.kind)).toEqual(["policy_decision", "tool_requested", "tool_call", "command", "tool_call"]);
    const p = payloads(view);
    expect(p[2]!.input).toEqual(p[1]!.input);
    expect(p[3]).toMatchObject({ program: "pytest", tool_use_id: "c1" });
    expect(p[4]!.input).toBeUndefined();
    expect(p[4]!.bodies).toEqual([expect.objectContaining({ role: "tool_output" })]);
  });
});
