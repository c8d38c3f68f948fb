// The recorder's second sources against transcripts the real CLIs wrote (test/fixtures/transcripts/README.md).
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { claudeUsage, ClaudeTranscript, type UsageCall } from "../../collector/recorder/sources/claude.ts";
import { SubagentFinder } from "../../collector/recorder/sources/tail.ts";
import { PAYLOADS, runIdFor } from "../../protocol/index.ts";
import { HOST_ID, payloadsOf, rig } from "../support/sources.ts";

const FIX = join(import.meta.dirname, "../fixtures/transcripts");
const lines = (name: string) => readFileSync(join(FIX, name), "utf8").split("\n").filter(Boolean);
const output = (calls: { payload: { usage: { output_tokens: number } } }[]) => calls.reduce((a, c) => a + c.payload.usage.output_tokens, 0);

// What the scripted vendor sent for the three responses of each STREAM session: 345 + 412 + 58.
const VENDOR_STREAM_OUTPUT = 815;

function read(text: string[], parser = new ClaudeTranscript()): UsageCall[] {
  return [...text.flatMap((l) => parser.line(l)), ...parser.flush()];
}

describe("Claude Code output tokens: the latest line of each response counts, whatever lines come between", () => {
  it("2.1.332 (tool results written mid-stream, every line final): each response once, with the vendor's counts", () => {
    const calls = read(lines("claude-2.1.332-interleaved.jsonl"));
    expect(calls.map((c) => c.payload.usage.output_tokens)).toEqual([345, 412, 58]);
    expect(output(calls)).toBe(VENDOR_STREAM_OUTPUT);
  });

  it("2.1.90 (each block written as it ends): the final line counts, though its total is not the largest", () => {
    // The placeholder lines carry no cache_creation split, the final one a split of zeros.
    const calls = read(lines("claude-2.1.90-streamed.jsonl"));
    expect(calls.map((c) => c.payload.usage.output_tokens)).toEqual([345, 412, 58]);
    expect(output(calls)).toBe(VENDOR_STREAM_OUTPUT);
  });

  it("a tool result between a response's placeholder lines and its final line does not end it", () => {
    // 2.1.90 writes each block as it ends (output 1) and the final count on the last; 2.1.332 writes
    // a tool's result as soon as the tool ran, before the response's next block. Both together:
    const real = lines("claude-2.1.90-streamed.jsonl");
    const result = real.findIndex((l) => l.includes('"tool_use_id":"toolu_vendor_fxa_4_2"'));
    const final = real.findIndex((l) => l.includes('"output_tokens":345'));
    expect(result).toBeGreaterThan(final);
    const reordered = [...real.slice(0, final), real[result]!, ...real.slice(final).filter((_, i) => i !== result - final)];
    const calls = read(reordered);
    expect(calls.map((c) => c.payload.usage.output_tokens)).toEqual([345, 412, 58]);
    expect(output(calls)).toBe(VENDOR_STREAM_OUTPUT);
  });

  it("a quiet flush records only responses whose final line arrived; one still streaming keeps counting", () => {
    const real = lines("claude-2.1.90-streamed.jsonl");
    const final = real.findIndex((l) => l.includes('"output_tokens":345'));
    const p = new ClaudeTranscript();
    for (const l of real.slice(0, final)) p.line(l);
    // The model paused longer than the quiet interval before its last block.
    expect(p.flush(true)).toEqual([]);
    const calls = [...real.slice(final).flatMap((l) => p.line(l)), ...p.flush()];
    expect(output(calls)).toBe(VENDOR_STREAM_OUTPUT);
    // A complete response is recorded by the quiet flush without waiting for the next one.
    const q = new ClaudeTranscript();
    for (const l of real.slice(0, final + 1)) q.line(l);
    expect(q.flush(true).map((c) => c.payload.usage.output_tokens)).toEqual([345]);
  });

  it("the same through the recorder: a quiet tick mid-response, then the rest of the file", () => {
    const r = rig(undefined, { quietMs: 30_000 });
    const dir = mkdtempSync(join(tmpdir(), "cc-quiet-"));
    const transcript = join(dir, "eed3e2da-794a-478e-abdf-026e543de44c.jsonl");
    const real = lines("claude-2.1.90-streamed.jsonl");
    const final = real.findIndex((l) => l.includes('"output_tokens":345'));
    writeFileSync(transcript, `${real.slice(0, final).join("\n")}\n`);
    const base = { session_id: "eed3e2da-794a-478e-abdf-026e543de44c", transcript_path: transcript, cwd: dir };
    r.event("claude-code", { ...base, hook_event_name: "SessionStart" });
    r.sources.tick();
    r.clock.now += 40_000;
    r.sources.tick();
    writeFileSync(transcript, `${real.join("\n")}\n`);
    r.sources.tick();
    r.event("claude-code", { ...base, hook_event_name: "Stop" });
    const calls = payloadsOf(r.frames(runIdFor(HOST_ID, "claude-code", base.session_id)), "llm_call");
    expect(calls.map((c) => (c.usage as { output_tokens: number }).output_tokens)).toEqual([345, 412, 58]);
    r.close();
  });
});

describe("Claude Code cache writes", () => {
  it("are cache_creation_input_tokens, the billed total, when the 5m/1h split disagrees", () => {
    const line = JSON.parse(lines("claude-2.1.332-interleaved.jsonl").find((l) => l.includes('"type":"assistant"'))!);
    const usage = line.message.usage as Record<string, unknown>;
    // Claude Code writes the split as zeros when the vendor sends none.
    expect(usage.cache_creation).toEqual({ ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 0 });
    expect(claudeUsage(usage).cache_write_tokens).toBe(501);
    const split = { ephemeral_5m_input_tokens: 10, ephemeral_1h_input_tokens: 5 };
    expect(
      claudeUsage({ input_tokens: 1, output_tokens: 2, cache_creation_input_tokens: 999, cache_creation: split }).cache_write_tokens,
    ).toBe(999);
    // The split only stands in for a total that is absent.
    expect(claudeUsage({ input_tokens: 1, output_tokens: 2, cache_creation: split }).cache_write_tokens).toBe(15);
    expect(claudeUsage({ input_tokens: 1, output_tokens: 2 }).cache_write_tokens).toBe(0);
  });

  it("thinking is a count: 2.1 writes it in output_tokens_details", () => {
    const line = JSON.parse(lines("claude-2.1.332-interleaved.jsonl").find((l) => l.includes('"type":"assistant"'))!);
    const usage = line.message.usage as Record<string, unknown>;
    expect(usage.output_tokens_details).toEqual({ thinking_tokens: 0 });
    expect(claudeUsage(usage).thinking_tokens).toBe(0);
    expect(claudeUsage({ ...usage, output_tokens_details: { thinking_tokens: 120 } }).thinking_tokens).toBe(120);
  });
});

describe("Claude Code subagent transcripts, both layouts", () => {
  const SUB21 = "44d42bf1-e215-448a-a40b-6d93a7c0a3ed";
  const SUB20 = "66d49389-c0a9-46da-a293-2c73ef5640e9";

  it("finds 2.1's <session>/subagents/ and 2.0's agent-<id>.jsonl of this session only", () => {
    const dir = mkdtempSync(join(tmpdir(), "cc-subs-"));
    cpSync(join(FIX, "claude-2.0.77-subagent"), dir, { recursive: true });
    cpSync(join(FIX, "claude-2.1.332-subagent"), dir, { recursive: true });
    // Another session's 2.0 subagent in the same project folder.
    writeFileSync(
      join(dir, "agent-other01.jsonl"),
      readFileSync(join(dir, "agent-a818f6b.jsonl"), "utf8").replaceAll(SUB20, "other-session"),
    );
    const finder = new SubagentFinder();
    const found = (session: string) =>
      finder
        .find(join(dir, `${session}.jsonl`))
        .map((p) => p.slice(dir.length + 1))
        .sort();
    const FOUR = ["agent-a818f6b.jsonl", "agent-aad42a6.jsonl", "agent-ab83608.jsonl", "agent-adf8938.jsonl"];
    expect(found(SUB20)).toEqual(FOUR);
    expect(found(SUB21)).toEqual([`${SUB21}/subagents/agent-aa6b70651b02c06a2.jsonl`]);
    // A subagent started later: its file appears empty, then gets its first line.
    const late = join(dir, "agent-late001.jsonl");
    writeFileSync(late, "");
    expect(found(SUB20)).toEqual(FOUR);
    writeFileSync(late, readFileSync(join(dir, "agent-a818f6b.jsonl")));
    expect(found(SUB20)).toEqual([...FOUR, "agent-late001.jsonl"]);
  });

  for (const [layout, fixture, session, expected] of [
    // main-agent 188, three warmups 12 each, the subagent's 222 and 133, main-done 97 (the vendor also
    // answered one call, 11 tokens, that Claude Code writes to no transcript).
    ["2.0.77", "claude-2.0.77-subagent", SUB20, 676],
    // main-agent 188, main-done 97, the subagent's 222 and 133, and the reply to its notification 97.
    ["2.1.332", "claude-2.1.332-subagent", SUB21, 737],
  ] as const)
    it(`${layout}: the recorder records the subagent's model calls in the session's run`, () => {
      const dir = mkdtempSync(join(tmpdir(), "cc-proj-"));
      cpSync(join(FIX, fixture), dir, { recursive: true });
      const r = rig();
      const base = { session_id: session, transcript_path: join(dir, `${session}.jsonl`), cwd: dir };
      r.event("claude-code", { ...base, hook_event_name: "SessionStart" });
      r.event("claude-code", { ...base, hook_event_name: "Stop" });
      r.event("claude-code", { ...base, hook_event_name: "SessionEnd", reason: "other" });
      const frames = r.frames(runIdFor(HOST_ID, "claude-code", session));
      const calls = payloadsOf(frames, "llm_call");
      expect(calls.reduce((a, c) => a + (c.usage as { output_tokens: number }).output_tokens, 0)).toBe(expected);
      expect(new Set(calls.map((c) => c.message_id)).size).toBe(calls.length);
      expect(payloadsOf(frames, "telemetry_gap")).toEqual([]);
      r.close();
    });

  it("2.0's agent files are not reported as sessions running without hooks", () => {
    const projects = mkdtempSync(join(tmpdir(), "cc-projects-"));
    mkdirSync(join(projects, "-home-u-proj"));
    cpSync(join(FIX, "claude-2.0.77-subagent"), join(projects, "-home-u-proj"), { recursive: true });
    const r = rig();
    r.event("claude-code", { session_id: SUB20, hook_event_name: "SessionStart", cwd: "/" });
    const since = 0;
    expect(r.sources.scanHookless(since, projects)).toEqual([]);
    expect(r.sources.scanHookless(since, projects)).toEqual([]);
    r.close();
  });

  it("every llm_call the sources record is a valid payload", () => {
    const calls = read(lines("claude-2.1.332-subagent/44d42bf1-e215-448a-a40b-6d93a7c0a3ed/subagents/agent-aa6b70651b02c06a2.jsonl"));
    expect(calls.length).toBe(2);
    for (const c of calls) expect(PAYLOADS.llm_call.safeParse(c.payload).success).toBe(true);
  });
});

describe("Codex 0.169: a turn whose tool call was denied", () => {
  const DIR = "codex-0.169-denied";
  const ROLLOUT = "rollout-2026-11-30T20-29-19-01a22e25-cee7-78a2-a314-a909cfe9f130.jsonl";
  const DENY_RM = {
    etag: "e1",
    policy: {
      v: 1 as const,
      workspace: "ws_test",
      issued_ms: 0,
      mode: "enforce" as const,
      tools: [{ id: "no-rm", tool: "Bash", command: "*rm -rf*", decision: "deny" as const, reason: "no deletes" }],
      default_tool_decision: "allow" as const,
      models: null,
      budgets: [],
      paused_runs: [],
      suspended_hosts: [],
      retention: { mode: "keep" as const, keep: [] },
    },
  };

  /** Replays the session's real hooks, each with the rollout as far as Codex had written it then. */
  function replay(r: ReturnType<typeof rig>, session: string): Record<string, unknown>[] {
    const dir = mkdtempSync(join(tmpdir(), "cx-denied-"));
    const path = join(dir, ROLLOUT);
    const rollout = lines(`${DIR}/${ROLLOUT}`);
    for (const h of lines(`${DIR}/hooks.jsonl`).map((l) => JSON.parse(l) as { rollout_lines: number; payload: Record<string, unknown> })) {
      writeFileSync(
        path,
        rollout
          .slice(0, h.rollout_lines)
          .map((l) => `${l}\n`)
          .join(""),
      );
      r.event("codex", { ...h.payload, session_id: session, transcript_path: path });
    }
    return r.frames(runIdFor(HOST_ID, "codex", session)).map((f) => ({ kind: f.kind, ...(JSON.parse(f.payload) as object) }));
  }

  it("records its model calls, and so does a second session that reached the same token totals", () => {
    const r = rig();
    r.recorder.policy = DENY_RM;
    for (const session of ["01a22e25-cee7-78a2-a314-a909cfe9f130", "01a22e25-0000-7000-8000-000000000002"]) {
      const frames = replay(r, session);
      expect(frames.map((f) => f.kind)).toEqual([
        "agent_start",
        "turn_start",
        "policy_decision",
        "token_denied",
        "llm_call",
        "llm_call",
        "turn_end",
        "agent_stop",
      ]);
      // The vendor sent 96 then 103 output tokens, 3800 and 3900 input tokens (1080 and 1090 cached).
      expect(frames.filter((f) => f.kind === "llm_call").map((f) => f.usage)).toEqual([
        { input_tokens: 2720, cache_read_tokens: 1080, output_tokens: 96, reasoning_tokens: 13 },
        { input_tokens: 2810, cache_read_tokens: 1090, output_tokens: 103, reasoning_tokens: 14 },
      ]);
    }
    r.close();
  });

  it("a fork's replay of its parent's history is still dropped when it outlasts a second", () => {
    const r = rig();
    const dir = mkdtempSync(join(tmpdir(), "cx-fork-"));
    const parent = join(dir, "rollout-2026-08-11T13-20-00-0199aaaa-1111-7222-8333-444455556666.jsonl");
    const child = join(dir, "rollout-2026-08-11T13-30-00-0199bbbb-1111-7222-8333-444455556666.jsonl");
    cpSync(join(FIX, "rollout-2026-08-11T13-20-00-0199aaaa-1111-7222-8333-444455556666.jsonl"), parent);
    // The child's replay burst spread over two seconds: the burst rule alone would count its tail.
    writeFileSync(
      child,
      readFileSync(join(FIX, "rollout-2026-08-11T13-30-00-0199bbbb-1111-7222-8333-444455556666.jsonl"), "utf8").replace(
        "13:30:00.150Z",
        "13:30:01.150Z",
      ),
    );
    for (const [session, path] of [
      ["0199aaaa-1111-7222-8333-444455556666", parent],
      ["0199bbbb-1111-7222-8333-444455556666", child],
    ] as const) {
      r.event("codex", { session_id: session, transcript_path: path, cwd: dir, hook_event_name: "SessionStart" });
      r.event("codex", { session_id: session, transcript_path: path, cwd: dir, hook_event_name: "Stop" });
    }
    const out = (s: string) =>
      payloadsOf(r.frames(runIdFor(HOST_ID, "codex", s)), "llm_call").reduce(
        (a, c) => a + (c.usage as { output_tokens: number }).output_tokens,
        0,
      );
    expect(out("0199aaaa-1111-7222-8333-444455556666")).toBe(300);
    expect(out("0199bbbb-1111-7222-8333-444455556666")).toBe(200);
    r.close();
  });
});
