// The recorder's second sources against transcripts the real CLIs wrote (test/fixtures/transcripts/README.md).
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { claudeUsage, ClaudeTranscript, type UsageCall } from "../../collector/recorder/sources/claude.ts";
import { runIdFor } from "../../protocol/index.ts";
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
