import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PAYLOADS } from "../../protocol/index.ts";
import { ClaudeTranscript, type UsageCall } from "../../collector/recorder/sources/claude.ts";
import { CodexRollout, type CodexOut } from "../../collector/recorder/sources/codex.ts";
import { splitLines } from "../../collector/recorder/sources/lines.ts";
import { StellaJournal } from "../../collector/recorder/sources/stella.ts";

const FIX = join(import.meta.dirname, "../fixtures/transcripts");
const read = (name: string) => readFileSync(join(FIX, name));
const CODEX_PARENT = "rollout-2026-08-11T13-20-00-0199aaaa-1111-7222-8333-444455556666.jsonl";
const CODEX_CHILD = "rollout-2026-08-11T13-30-00-0199bbbb-1111-7222-8333-444455556666.jsonl";

function sum(calls: { payload: { usage: Record<string, number | undefined> } }[]) {
  const out: Record<string, number> = {};
  for (const c of calls) for (const [k, v] of Object.entries(c.payload.usage)) out[k] = (out[k] ?? 0) + (v ?? 0);
  return out;
}

function claudeCalls(bytes: Buffer, chunk = bytes.length): { calls: UsageCall[]; parser: ClaudeTranscript; consumed: number } {
  let parser = new ClaudeTranscript();
  const calls: UsageCall[] = [];
  let offset = 0;
  let size = chunk;
  // Feeds the file in chunks as a tailer would, restarting the parser from its saved state between chunks.
  while (offset < bytes.length) {
    const { lines, consumed } = splitLines(bytes.subarray(offset, offset + size), offset);
    if (consumed === 0) {
      if (offset + size >= bytes.length) break;
      size *= 2;
      continue;
    }
    size = chunk;
    for (const l of lines) calls.push(...parser.line(l.text));
    offset += consumed;
    parser = new ClaudeTranscript(JSON.parse(JSON.stringify(parser.state)));
  }
  calls.push(...parser.flush());
  return { calls, parser, consumed: offset };
}

describe("Claude Code transcript usage", () => {
  it("one llm_call per response: largest record per message.id+requestId, progress lines counted, synthetic skipped", () => {
    const { calls } = claudeCalls(read("claude-session.jsonl"));
    // Each response once its stream moved on (A, S1, B); the rest when the session flushed.
    expect(calls.map((c) => c.payload.message_id)).toEqual(["msg_A", "msg_S1", "msg_B", "msg_S2", "msg_C"]);
    for (const c of calls) expect(PAYLOADS.llm_call.safeParse(c.payload).success).toBe(true);
    expect(calls[0]!.payload).toMatchObject({
      path: "transcript",
      vendor: "anthropic",
      model: "claude-opus-4-6",
      request_id: "req_A",
      usage: { input_tokens: 3, output_tokens: 245, cache_read_tokens: 50973, cache_write_tokens: 713 },
    });
    expect(calls[2]!.payload.request_id).toBeUndefined();
    expect(calls[1]!.payload).toMatchObject({ model: "claude-haiku-4-5", usage: { output_tokens: 310, cache_write_tokens: 3000 } });
    expect(sum(calls)).toEqual({ input_tokens: 1255, output_tokens: 1284, cache_read_tokens: 158973, cache_write_tokens: 4133 });
    expect(JSON.stringify(calls)).not.toContain("SECRET-THOUGHT");
  });

  it("gives the same totals fed in small chunks with a restart between each (no double count, no loss)", () => {
    const whole = claudeCalls(read("claude-session.jsonl"));
    for (const chunk of [97, 500, 1333]) {
      const parts = claudeCalls(read("claude-session.jsonl"), chunk);
      expect(sum(parts.calls)).toEqual(sum(whole.calls));
      expect(parts.calls.length).toBe(whole.calls.length);
    }
  });

  it("leaves a truncated last line unconsumed and counts a corrupt line as bad", () => {
    const bytes = read("claude-session.jsonl");
    const { lines, consumed } = splitLines(bytes, 0);
    expect(consumed).toBeLessThan(bytes.length);
    expect(lines.length).toBe(17);
    const p = new ClaudeTranscript();
    p.line(bytes.subarray(consumed).toString());
    expect(p.bad).toBe(1);
  });

  it("finalizes a response when its stream moves on, holds the open one until flushed", () => {
    const p = new ClaudeTranscript();
    const line = (id: string, out: number, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        type: "assistant",
        requestId: `r_${id}`,
        timestamp: "2026-01-01T00:00:00Z",
        message: { id, model: "m", usage: { input_tokens: 1, output_tokens: out } },
        ...extra,
      });
    expect(p.line(line("a", 1))).toEqual([]);
    expect(p.line(line("a", 50))).toEqual([]);
    const done = p.line(line("b", 2));
    expect(done.map((c) => [c.payload.message_id, c.payload.usage.output_tokens])).toEqual([["a", 50]]);
    // A late repeat of a recorded response is not counted again (and b's stream has moved on).
    expect(p.line(line("a", 60)).map((c) => c.payload.message_id)).toEqual(["b"]);
    expect(p.flush()).toEqual([]);
  });
});

function codexRun(name: string, parser = new CodexRollout()) {
  const { lines } = splitLines(read(name), 0);
  const out: CodexOut[] = [];
  for (const l of lines) out.push(...parser.line(l.text));
  const usage = out.flatMap((o) => ("usage" in o ? [o.usage] : []));
  const tools = out.flatMap((o) => ("tool" in o ? [o.tool] : []));
  return { usage, tools, parser };
}

describe("Codex rollout usage and tools", () => {
  it("drops re-emissions and unadvanced totals, records deltas of the cumulative totals with the turn's model", () => {
    const { usage } = codexRun(CODEX_PARENT);
    expect(usage.map((u) => [u.payload.model, u.payload.usage])).toEqual([
      ["gpt-5-codex", { input_tokens: 800, output_tokens: 50, cache_read_tokens: 200, reasoning_tokens: 10 }],
      ["gpt-5-codex", { input_tokens: 500, output_tokens: 80, cache_read_tokens: 1000, reasoning_tokens: 20 }],
      ["gpt-5", { input_tokens: 700, output_tokens: 170, cache_read_tokens: 800, reasoning_tokens: 70 }],
    ]);
    // The totals equal the session's last cumulative total (4000 in, 2000 cached, 300 out, 100 reasoning).
    expect(sum(usage)).toEqual({ input_tokens: 2000, cache_read_tokens: 2000, output_tokens: 300, reasoning_tokens: 100 });
    for (const u of usage) expect(PAYLOADS.llm_call.safeParse(u.payload).success).toBe(true);
  });

  it("pairs function_call and custom_tool_call with their outputs by call_id; an unfinished call waits", () => {
    const { tools, parser } = codexRun(CODEX_PARENT);
    expect(tools.map((t) => [t.call_id, t.name, t.exit_code])).toEqual([
      ["call_1", "exec_command", 0],
      ["call_2", "apply_patch", 1],
    ]);
    expect(tools[0]).toMatchObject({ input: { cmd: "ls -la" }, duration_ms: 250 });
    expect(Object.keys(parser.state.calls)).toEqual(["call_3"]);
  });

  it("skips a subagent rollout's replay of the parent's token_counts; never double-counts the cumulative totals", () => {
    const parent = codexRun(CODEX_PARENT);
    const child = codexRun(CODEX_CHILD);
    expect(child.usage.map((u) => u.payload.model)).toEqual(["gpt-5-codex-mini", "gpt-5-codex-mini"]);
    expect(sum(child.usage)).toEqual({
      input_tokens: 600,
      cache_read_tokens: 1000,
      output_tokens: 200,
      reasoning_tokens: 50,
      cache_write_tokens: 64,
    });
    const all = sum([...parent.usage, ...child.usage]);
    // Both files together: the child's last cumulative total (5600 in, 3000 cached, 500 out).
    expect(all).toMatchObject({ input_tokens: 2600, cache_read_tokens: 3000, output_tokens: 500, reasoning_tokens: 150 });
    const ids = new Set(parent.usage.map((u) => u.identity));
    expect(child.usage.some((u) => ids.has(u.identity))).toBe(false);
  });

  it("starts a new baseline on a regression, ignores info:null, resumes from saved state", () => {
    const tc = (total: number[], ts = "2026-01-01T00:00:01Z") =>
      JSON.stringify({
        timestamp: ts,
        type: "event_msg",
        payload: {
          type: "token_count",
          info: {
            total_token_usage: { input_tokens: total[0], cached_input_tokens: 0, output_tokens: total[1], reasoning_output_tokens: 0 },
          },
        },
      });
    const a = new CodexRollout();
    expect(a.line(tc([100, 10]))).toHaveLength(1);
    expect(a.line(JSON.stringify({ type: "event_msg", payload: { type: "token_count", info: null } }))).toEqual([]);
    const b = new CodexRollout(a.state);
    const [next] = b.line(tc([150, 20]));
    expect(next && "usage" in next && next.usage.payload.usage).toMatchObject({ input_tokens: 50, output_tokens: 10 });
    const [reset] = b.line(tc([30, 5]));
    expect(reset && "usage" in reset && reset.usage.payload.usage).toMatchObject({ input_tokens: 30, output_tokens: 5 });
  });
});

describe("Stella journal usage", () => {
  it("one llm_call per step_usage; usage_incomplete and unknown events skipped", () => {
    const p = new StellaJournal();
    const calls = splitLines(read("stella-journal.jsonl"), 0).lines.flatMap((l) => p.line(l.text));
    expect(calls.map((c) => [c.payload.vendor, c.payload.model])).toEqual([
      ["anthropic", "claude-sonnet-4-5"],
      ["openrouter", "gpt-5"],
    ]);
    expect(calls[0]!.payload).toMatchObject({
      usage: { input_tokens: 3000, cache_read_tokens: 9000, output_tokens: 340, cache_write_tokens: 1500, reasoning_tokens: 120 },
      cost_microusd: 21300,
      latency_ms: 4200,
    });
    expect(sum(calls)).toEqual({
      input_tokens: 4000,
      cache_read_tokens: 21000,
      output_tokens: 1140,
      cache_write_tokens: 1500,
      reasoning_tokens: 120,
    });
    for (const c of calls) expect(PAYLOADS.llm_call.safeParse(c.payload).success).toBe(true);
    expect(p.bad).toBe(0);
  });
});

describe("finding the journal of a Stella session", () => {
  it("picks the journal written since the session started that nobody follows, not an older one", async () => {
    const { mkdtempSync, mkdirSync, writeFileSync, utimesSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { activeStellaJournal } = await import("../../collector/recorder/sources/tail.ts");
    const dir = mkdtempSync(join(tmpdir(), "stella-data-"));
    const journal = (id: string) => {
      mkdirSync(join(dir, "sessions", id), { recursive: true });
      const path = join(dir, "sessions", id, "journal.jsonl");
      writeFileSync(path, "{}\n");
      return path;
    };
    const old = journal("ses-old");
    const past = (Date.now() - 3_600_000) / 1000;
    utimesSync(old, past, past);
    const since = Date.now() - 1000;
    const current = journal("ses-current");
    expect(activeStellaJournal(since, new Set(), dir)).toBe(current);
    expect(activeStellaJournal(since, new Set([current]), dir)).toBeNull();
    expect(activeStellaJournal(since, new Set(), join(dir, "missing"))).toBeNull();
  });
});
