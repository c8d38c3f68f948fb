// npm run bench:redact-sse — the streamed response's content scan (collector/gateway/model/sse-redact.ts)
// on three streams: bench:gateway's own (40 deltas), a long Anthropic answer and a long Chat
// Completions one, each with a credential split over two deltas. Beside it, in the same run: the
// regular-expression version it replaced (test/support/sse-redact-reference.ts, same output) and
// the floor, findCredentials over the stream's content already joined (the scan any content-aware
// redaction pays, with no SSE or JSON read at all). Times are the best of the rounds' means, in µs.
import { performance } from "node:perf_hooks";
import { redactSse } from "../../collector/gateway/model/sse-redact.ts";
import { findCredentials } from "../../protocol/redact.ts";
import { referenceRedactSse } from "../../test/support/sse-redact-reference.ts";
import { anthropicStream, sse } from "../../test/support/upstream.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BUDGET_MS = Number(process.env.BENCH_ROUND_MS ?? 300);
const KEY = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
const PROSE = "The function reads the file, checks each line against the schema and returns the rows it kept. ";

function gatewayStream(): { stream: string; content: string } {
  const events = anthropicStream({
    id: "msg_bench_1",
    model: "claude-sonnet-4-5",
    text: "x",
    start: { input_tokens: 30, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 1 },
    deltas: [{ output_tokens: 85 }],
  });
  const stream = [...events.slice(0, 2), ...Array.from({ length: 40 }, () => events[2]!), ...events.slice(3)].join("");
  return { stream, content: "x".repeat(40) };
}

function texts(n: number): string[] {
  const out = Array.from({ length: n }, (_, i) => PROSE.slice(0, 20 + (i % 60)));
  out[n >> 1] = `key ${KEY.slice(0, 17)}`;
  out[(n >> 1) + 1] = `${KEY.slice(17)} done`;
  return out;
}

function anthropicLong(): { stream: string; content: string } {
  const t = texts(600);
  const delta = (text: string) =>
    sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } });
  const events = anthropicStream({
    id: "msg_2",
    model: "claude-sonnet-4-5",
    text: "",
    start: { input_tokens: 30 },
    deltas: [{ output_tokens: 900 }],
  });
  return { stream: [...events.slice(0, 2), ...t.map(delta), ...events.slice(3)].join(""), content: t.join("") };
}

function chatLong(): { stream: string; content: string } {
  const t = texts(600);
  const chunk = (content: string) =>
    sse(null, {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      created: 1,
      model: "gpt-5",
      choices: [{ index: 0, delta: { content }, finish_reason: null }],
    });
  return { stream: `${t.map(chunk).join("")}data: [DONE]\n\n`, content: t.join("") };
}

/** Mean µs per call of `fn`, best of the rounds (each round runs for BUDGET_MS). */
function micros(fn: () => unknown): number {
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < ROUNDS; r++) {
    let n = 0;
    const start = performance.now();
    let now = start;
    while (now - start < BUDGET_MS) {
      for (let i = 0; i < 16; i++) fn();
      n += 16;
      now = performance.now();
    }
    best = Math.min(best, ((now - start) * 1000) / n);
  }
  return best;
}

const cases = [
  ["bench:gateway's stream (40 deltas)", gatewayStream()],
  ["Anthropic, 600 deltas", anthropicLong()],
  ["Chat Completions, 600 chunks", chatLong()],
] as const;

const rows: string[][] = [];
const result: Record<string, number> = {};
for (const [name, { stream, content }] of cases) {
  if (JSON.stringify(redactSse(stream)) !== JSON.stringify(referenceRedactSse(stream))) throw new Error(`${name}: the two scans differ`);
  const now = micros(() => redactSse(stream));
  const before = micros(() => referenceRedactSse(stream));
  const floor = micros(() => findCredentials(content));
  rows.push([
    name,
    (stream.length / 1024).toFixed(1),
    now.toFixed(1),
    before.toFixed(1),
    floor.toFixed(1),
    (now / floor).toFixed(2),
    (before / now).toFixed(2),
  ]);
  const slug = name.split(/[^A-Za-z]+/)[0]!.toLowerCase() || "stream";
  result[`${slug}_us`] = Number(now.toFixed(1));
  result[`${slug}_floor_ratio`] = Number((now / floor).toFixed(2));
  result[`${slug}_speedup`] = Number((before / now).toFixed(2));
}
const head = ["stream", "KB", "redactSse µs", "regex version µs", "floor µs", "÷ floor", "speed-up"];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
console.log(`${line(head)}\n${rows.map(line).join("\n")}`);
console.log(`RESULT ${JSON.stringify(result)}`);
