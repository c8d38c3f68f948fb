import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hostChainId, runIdFor, verifyChain } from "../../protocol/index.ts";
import { gitIn, gitRepo, HOST_ID, payloadsOf, rig } from "../support/sources.ts";

const FIX = join(import.meta.dirname, "../fixtures/transcripts");
const CODEX_PARENT = "rollout-2026-08-11T13-20-00-0199aaaa-1111-7222-8333-444455556666.jsonl";

function usageSum(ps: Record<string, unknown>[]) {
  const out: Record<string, number> = {};
  for (const p of ps) for (const [k, v] of Object.entries(p.usage as Record<string, number>)) out[k] = (out[k] ?? 0) + v;
  return out;
}

describe("recorder sources: transcripts into the session's run", () => {
  it("Claude Code: llm_calls from the transcript, final before turn_end/agent_stop, one log_unreadable gap for the truncated line, the user's file untouched", () => {
    const r = rig();
    const dir = mkdtempSync(join(tmpdir(), "cc-proj-"));
    const transcript = join(dir, "sess-1.jsonl");
    const full = readFileSync(join(FIX, "claude-session.jsonl"));
    const lines = full.toString().split("\n");
    writeFileSync(transcript, `${lines.slice(0, 6).join("\n")}\n`);
    const base = { session_id: "sess-1", transcript_path: transcript, cwd: dir };
    r.event("claude-code", { ...base, hook_event_name: "SessionStart", source: "startup" });
    r.event("claude-code", { ...base, hook_event_name: "UserPromptSubmit", prompt: "fix the failing test" });
    r.sources.tick();
    const chain = runIdFor(HOST_ID, "claude-code", "sess-1");
    // A tool's result is no sign that msg_A is over (Claude Code 2.1 writes it mid-stream): nothing is final yet.
    expect(payloadsOf(r.frames(chain), "llm_call")).toEqual([]);
    writeFileSync(transcript, full);
    r.sources.tick();
    r.event("claude-code", { ...base, hook_event_name: "Stop", last_assistant_message: "Done: fixed." });
    r.event("claude-code", { ...base, hook_event_name: "SessionEnd", reason: "other" });
    const frames = r.frames(chain);
    expect(verifyChain(chain, frames).problems).toEqual([]);
    const kinds = frames.map((f) => f.kind);
    expect(kinds.slice(0, 2)).toEqual(["agent_start", "turn_start"]);
    expect(kinds.indexOf("turn_end")).toBeGreaterThan(kinds.lastIndexOf("llm_call"));
    expect(kinds.at(-1)).toBe("agent_stop");
    const calls = payloadsOf(frames, "llm_call");
    expect(calls.map((p) => p.message_id).sort()).toEqual(["msg_A", "msg_B", "msg_C", "msg_S1", "msg_S2"]);
    expect(usageSum(calls)).toEqual({ input_tokens: 1255, output_tokens: 1284, cache_read_tokens: 158973, cache_write_tokens: 4133 });
    const gaps = payloadsOf(frames, "telemetry_gap");
    expect(gaps).toHaveLength(1);
    expect(gaps[0]).toMatchObject({ path: "transcript", cause: "log_unreadable" });
    expect(String(gaps[0]!.detail)).toContain("truncated line");
    expect(r.logs.some((l) => l.includes("truncated line"))).toBe(true);
    expect(readFileSync(transcript).equals(full)).toBe(true);
    r.close();
  });

  it("a restart between reads neither re-reads nor double-counts; a corrupt middle line is one gap and nothing after it is lost", () => {
    const dir = mkdtempSync(join(tmpdir(), "cc-proj-"));
    const transcript = join(dir, "sess-2.jsonl");
    const lines = readFileSync(join(FIX, "claude-session.jsonl"), "utf8").split("\n").slice(0, 17);
    writeFileSync(transcript, `${lines.slice(0, 8).join("\n")}\n{"type":"assistant","mess\n`);
    const a = rig();
    const base = { session_id: "sess-2", transcript_path: transcript, cwd: dir };
    a.event("claude-code", { ...base, hook_event_name: "SessionStart" });
    a.sources.tick();
    a.close();
    appendFileSync(transcript, `${lines.slice(8).join("\n")}\n`);
    // The recorder restarts from its journal and sources.json.
    const b = rig(a.dir);
    b.sources.tick();
    b.sources.tick();
    b.event("claude-code", { ...base, hook_event_name: "SessionEnd", reason: "other" });
    const frames = b.frames(runIdFor(HOST_ID, "claude-code", "sess-2"));
    const calls = payloadsOf(frames, "llm_call");
    expect(calls.map((p) => p.message_id).sort()).toEqual(["msg_A", "msg_B", "msg_C", "msg_S1", "msg_S2"]);
    expect(usageSum(calls).output_tokens).toBe(1284);
    expect(payloadsOf(frames, "telemetry_gap").map((g) => g.cause)).toEqual(["log_unreadable"]);
    b.close();
  });

  it("Codex: llm_calls from token_count deltas, and only the tool calls whose hook did not fire, with no policy decision", () => {
    const r = rig();
    const dir = mkdtempSync(join(tmpdir(), "cx-"));
    const rollout = join(dir, CODEX_PARENT);
    copyFileSync(join(FIX, CODEX_PARENT), rollout);
    const base = { session_id: "0199aaaa", transcript_path: rollout, cwd: dir, model: "gpt-5-codex" };
    r.event("codex", { ...base, hook_event_name: "SessionStart", source: "startup" });
    // call_1's hook fired (Pre and Post); call_2 (apply_patch) fired none.
    r.event("codex", {
      ...base,
      hook_event_name: "PreToolUse",
      turn_id: "t1",
      tool_name: "Bash",
      tool_use_id: "call_1",
      tool_input: { command: "ls -la" },
    });
    r.event("codex", {
      ...base,
      hook_event_name: "PostToolUse",
      turn_id: "t1",
      tool_name: "Bash",
      tool_use_id: "call_1",
      tool_input: { command: "ls -la" },
      tool_response: "a.ts",
    });
    r.sources.tick();
    const chain = runIdFor(HOST_ID, "codex", "0199aaaa");
    const frames = r.frames(chain);
    const calls = payloadsOf(frames, "llm_call");
    expect(calls.map((p) => p.model)).toEqual(["gpt-5-codex", "gpt-5-codex", "gpt-5"]);
    expect(usageSum(calls)).toEqual({ input_tokens: 2000, cache_read_tokens: 2000, output_tokens: 300, reasoning_tokens: 100 });
    const tools = payloadsOf(frames, "tool_call");
    expect(tools.filter((t) => t.path === "transcript")).toEqual([
      expect.objectContaining({ tool_name: "apply_patch", tool_use_id: "call_2", status: "error", exit_code: 1 }),
    ]);
    const fromRollout = frames.findIndex(
      (f) => f.kind === "tool_call" && (JSON.parse(f.payload) as { path: string }).path === "transcript",
    );
    expect(frames[fromRollout - 1]!.kind).not.toBe("policy_decision");
    expect(payloadsOf(frames, "file_io").some((p) => p.path === "transcript")).toBe(false);
    r.close();
  });

  it("a tool hook rewrites sources.json only for a Codex session (whose rollout is checked against it), and the hooked id survives a restart", () => {
    const dir = mkdtempSync(join(tmpdir(), "cx-"));
    const rollout = join(dir, CODEX_PARENT);
    copyFileSync(join(FIX, CODEX_PARENT), rollout);
    const transcript = join(dir, "sess-3.jsonl");
    writeFileSync(transcript, "");
    const a = rig();
    const state = join(a.dir, "sources.json");
    const claude = { session_id: "sess-3", transcript_path: transcript, cwd: dir };
    a.event("claude-code", { ...claude, hook_event_name: "SessionStart" });
    const codex = { session_id: "0199aaaa", transcript_path: rollout, cwd: dir, model: "gpt-5-codex" };
    a.event("codex", { ...codex, hook_event_name: "SessionStart", source: "startup" });
    rmSync(state);
    a.event("claude-code", {
      ...claude,
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_use_id: "toolu_1",
      tool_input: { command: "ls" },
    });
    a.event("claude-code", {
      ...claude,
      hook_event_name: "PostToolUse",
      tool_name: "Bash",
      tool_use_id: "toolu_1",
      tool_input: { command: "ls" },
      tool_response: "a",
    });
    expect(() => readFileSync(state)).toThrow(/ENOENT/);
    a.event("codex", {
      ...codex,
      hook_event_name: "PreToolUse",
      turn_id: "t1",
      tool_name: "Bash",
      tool_use_id: "call_1",
      tool_input: { command: "ls -la" },
    });
    expect((JSON.parse(readFileSync(state, "utf8")) as { hooked: Record<string, string[]> }).hooked).toEqual({
      [runIdFor(HOST_ID, "codex", "0199aaaa")]: ["call_1"],
    });
    a.close();
    // Restarted before the rollout is read: call_1 is still known as hooked, so only call_2 comes from the rollout.
    const b = rig(a.dir);
    b.sources.tick();
    const tools = payloadsOf(b.frames(runIdFor(HOST_ID, "codex", "0199aaaa")), "tool_call");
    expect(tools.filter((t) => t.path === "transcript").map((t) => t.tool_use_id)).toEqual(["call_2"]);
    b.close();
  });

  it("an unreadable rollout: a clear log line and one log_unreadable gap", () => {
    const r = rig();
    const base = { session_id: "cx-missing", transcript_path: "/nonexistent/rollout-x.jsonl", cwd: "/" };
    r.event("codex", { ...base, hook_event_name: "SessionStart" });
    r.sources.tick();
    r.event("codex", { ...base, hook_event_name: "SessionEnd", reason: "exit" });
    const gaps = payloadsOf(r.frames(runIdFor(HOST_ID, "codex", "cx-missing")), "telemetry_gap");
    expect(gaps.map((g) => g.cause)).toEqual(["log_unreadable"]);
    expect(r.logs.some((l) => l.includes("cannot be read"))).toBe(true);
    r.close();
  });
});

describe("worktree reconciliation", () => {
  it("after a turn (at most every interval) and at the session's end: changed paths with line counts, the session's commits, nothing ignored", () => {
    const repo = gitRepo();
    const r = rig(undefined, { worktreeMs: 15_000 });
    const base = { session_id: "wt-1", transcript_path: join(repo, "none.jsonl"), cwd: join(repo) };
    r.event("claude-code", { ...base, hook_event_name: "SessionStart" });
    writeFileSync(join(repo, "a.txt"), "one\n2\nthree\nfour\n");
    writeFileSync(join(repo, "new.txt"), "x\ny\n");
    writeFileSync(join(repo, "debug.log"), "ignored\n");
    mkdirSync(join(repo, "sub"));
    writeFileSync(join(repo, "sub", "deep.txt"), "z");
    rmSync(join(repo, "b.txt"));
    r.event("claude-code", { ...base, hook_event_name: "Stop" });
    r.sources.tick();
    const chain = runIdFor(HOST_ID, "claude-code", "wt-1");
    let rec = payloadsOf(r.frames(chain), "oxagen:worktree_reconciled");
    expect(rec).toHaveLength(1);
    const changed = Object.fromEntries((rec[0]!.changed as { file: string }[]).map((c) => [c.file, c]));
    expect(changed).toEqual({
      "a.txt": { file: "a.txt", status: "modified", added: 2, removed: 1 },
      "b.txt": { file: "b.txt", status: "deleted", added: 0, removed: 1 },
      "new.txt": { file: "new.txt", status: "untracked", added: 2 },
      "sub/deep.txt": { file: "sub/deep.txt", status: "untracked", added: 1 },
    });
    expect(rec[0]).toMatchObject({ path: "worktree", commits: [] });
    // A second turn 5 s later waits for the interval; the tick after it records.
    gitIn(repo, "add", "-A");
    gitIn(repo, "commit", "-q", "-m", "fix: token sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789");
    r.clock.now += 5000;
    r.event("claude-code", { ...base, hook_event_name: "Stop" });
    r.sources.tick();
    expect(payloadsOf(r.frames(chain), "oxagen:worktree_reconciled")).toHaveLength(1);
    r.clock.now += 15_000;
    r.sources.tick();
    rec = payloadsOf(r.frames(chain), "oxagen:worktree_reconciled");
    expect(rec).toHaveLength(2);
    expect(rec[1]).toMatchObject({ changed: [], commits: [{ sha: gitIn(repo, "rev-parse", "HEAD").trim() }] });
    expect(JSON.stringify(rec[1])).not.toContain("sk-ant");
    r.event("claude-code", { ...base, hook_event_name: "SessionEnd", reason: "other" });
    rec = payloadsOf(r.frames(chain), "oxagen:worktree_reconciled");
    expect(rec).toHaveLength(3);
    expect(rec[2]).toMatchObject({ final: true });
    expect(r.frames(chain).at(-1)!.kind).toBe("agent_stop");
    r.close();
  });

  it("keeps the worktree frame within the 64 KiB payload limit, marked truncated, when too much changed", () => {
    const repo = gitRepo();
    for (let i = 0; i < 2_000; i++) writeFileSync(join(repo, `f${i}.txt`), "x\n");
    const r = rig();
    const base = { session_id: "wt-2", cwd: repo };
    r.event("claude-code", { ...base, hook_event_name: "SessionStart" });
    r.event("claude-code", { ...base, hook_event_name: "SessionEnd", reason: "other" });
    const frames = r.frames(runIdFor(HOST_ID, "claude-code", "wt-2"));
    const [rec] = payloadsOf(frames, "oxagen:worktree_reconciled");
    expect(rec).toMatchObject({ truncated: true, final: true });
    const listed = (rec!.changed as unknown[]).length;
    expect(listed).toBeGreaterThan(100);
    expect(listed).toBeLessThan(2_000);
    const frame = frames.find((f) => f.kind === "oxagen:worktree_reconciled")!;
    expect(frame.payload.length).toBeLessThanOrEqual(64 * 1024);
    r.close();
  });
});

describe("hookless Claude Code sessions", () => {
  it("a transcript changing for a session no hook named: one hooks_missing gap on the host chain, after two scans", () => {
    const r = rig();
    const projects = mkdtempSync(join(tmpdir(), "cc-projects-"));
    mkdirSync(join(projects, "-home-u-proj"));
    const path = join(projects, "-home-u-proj", "lonely-session.jsonl");
    writeFileSync(path, "{}\n");
    writeFileSync(join(projects, "-home-u-proj", "hooked-session.jsonl"), "{}\n");
    const old = join(projects, "-home-u-proj", "old-session.jsonl");
    writeFileSync(old, "{}\n");
    utimesSync(old, new Date(0), new Date(0));
    r.event("claude-code", { session_id: "hooked-session", hook_event_name: "SessionStart", cwd: "/" });
    const since = Date.now() - 60_000;
    expect(r.sources.scanHookless(since, projects)).toEqual([]);
    expect(r.sources.scanHookless(since, projects)).toEqual(["lonely-session"]);
    expect(r.sources.scanHookless(since, projects)).toEqual([]);
    const frames = r.frames(hostChainId(HOST_ID));
    expect(payloadsOf(frames)).toEqual([
      expect.objectContaining({ path: "recorder", cause: "hooks_missing", detail: expect.stringContaining("lonely-session") }),
    ]);
    expect(r.recorder.journal.chains.get(hostChainId(HOST_ID))!.run).toBeNull();
    r.close();
  });
});
