// The streamed response's content scan (collector/gateway/model/sse-redact.ts, its literals read by
// the hand-written scanner in sse-json.ts) gives exactly what the regular-expression version gave
// (test/support/sse-redact-reference.ts): the same text and the same removals, or the same error,
// on vendor-shaped streams with credentials split anywhere, on random JSON, and on malformed lines.
import { describe, expect, it } from "vitest";
import { redactSse } from "../../collector/gateway/model/sse-redact.ts";
import { jsonLine } from "../../collector/gateway/model/sse-json.ts";
import { referenceJsonLine, referenceRedactSse } from "../support/sse-redact-reference.ts";
import { sse } from "../support/upstream.ts";
import { seeded } from "../support/random.ts";

const SECRETS = [
  "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz012345-AbCdEfAA",
  "ghp_0123456789abcdefghijABCDEFGHIJ012345",
  "AKIAIOSFODNN7EXAMPLE",
  "password=hunter2hunter2",
  'password="hunter2hunter2"',
  `Bearer ${"a".repeat(12)}b1c2d3e4f5g6`,
  "mongodb://app:s3cr3tpass@db.internal/x",
  "sk-proj-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
  "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
  '{"api_key": "abcd1234efgh5678"}',
];

const outcome = (f: (s: string) => unknown, s: string) => {
  try {
    return { ok: f(s) };
  } catch (err) {
    return { threw: (err as Error).message };
  }
};

const same = (stream: string) => {
  // Line by line: the same literals and indexes (an output alike for other reasons is not enough).
  for (const line of stream.split(/\r?\n/)) {
    if (!line.startsWith("data: ")) continue;
    const data = line.slice(6);
    const mine = jsonLine(data);
    const theirs = referenceJsonLine(data);
    if (JSON.stringify(mine) !== JSON.stringify(theirs)) expect({ data, mine }).toEqual({ data, mine: theirs });
  }
  const got = outcome(redactSse, stream);
  const want = outcome(referenceRedactSse, stream);
  // The one change on purpose: a credential holding a lone surrogate is hashed, not thrown on.
  if ("threw" in want && want.threw === "string holds a lone surrogate") {
    expect(got).toHaveProperty("ok");
    return;
  }
  if (JSON.stringify(got) !== JSON.stringify(want)) expect({ stream, got }).toEqual({ stream, got: want });
};

/** Text cut into deltas at random places, each delta one content_block_delta (or chat chunk). */
function pieces(r: () => number, text: string): string[] {
  const out: string[] = [];
  for (let at = 0; at < text.length; ) {
    const n = 1 + Math.floor(r() * 12);
    out.push(text.slice(at, at + n));
    at += n;
  }
  return out;
}

const FILL = ["Here is ", "the file: ", 'say "hi"', "line\nbreak", "tab\t", "é ü 日本", "\u0001", "\\path\\", " ok. ", "\u2028", "😀"];

function vendorStream(r: () => number): string {
  let text = "";
  for (let i = 0, n = 1 + Math.floor(r() * 5); i < n; i++) {
    text += FILL[Math.floor(r() * FILL.length)]!;
    if (r() < 0.6) text += SECRETS[Math.floor(r() * SECRETS.length)]!;
  }
  const deltas = pieces(r, text);
  const block = Math.floor(r() * 3);
  const shape = Math.floor(r() * 3);
  if (shape === 0)
    return [
      sse("message_start", {
        type: "message_start",
        message: { id: "msg_1", model: "claude-sonnet-4-5", content: [], usage: { input_tokens: 3 } },
      }),
      sse("content_block_start", { type: "content_block_start", index: block, content_block: { type: "text", text: "" } }),
      ...deltas.map((t) =>
        sse("content_block_delta", { type: "content_block_delta", index: block, delta: { type: "text_delta", text: t } }),
      ),
      sse("content_block_stop", { type: "content_block_stop", index: block }),
      sse("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 9 } }),
      sse("message_stop", { type: "message_stop" }),
    ].join("");
  if (shape === 1)
    return [
      ...deltas.map((content) => sse(null, { id: "c1", object: "chat.completion.chunk", choices: [{ index: block, delta: { content } }] })),
      "data: [DONE]\n\n",
    ].join("");
  return deltas
    .map((delta) =>
      sse("response.output_text.delta", {
        type: "response.output_text.delta",
        output_index: block,
        content_index: 0,
        item_id: "msg_x",
        delta,
      }),
    )
    .join("");
}

const JUNK = [
  '"',
  '"',
  "\\",
  "{",
  "}",
  "[",
  "]",
  ":",
  ",",
  " ",
  "\t",
  "\r",
  "\u2028",
  "\u00a0",
  "0",
  "7",
  "e",
  "-",
  "true",
  "null",
  "x",
  "index",
  '"index"',
  "content_index",
  "\\u00e9",
  "\\ud800",
  "\\n",
  '\\"',
];

function junkLine(r: () => number): string {
  let s = r() < 0.5 ? "{" : "[";
  for (let i = 0, n = Math.floor(r() * 30); i < n; i++) s += JUNK[Math.floor(r() * JUNK.length)]!;
  if (r() < 0.5) s += SECRETS[Math.floor(r() * SECRETS.length)]!.slice(0, Math.floor(r() * 40));
  if (r() < 0.5) s += r() < 0.5 ? "}" : "]";
  return s;
}

function randomJson(r: () => number, depth: number): unknown {
  const k = Math.floor(r() * (depth > 2 ? 4 : 6));
  if (k === 0) return Math.floor(r() * 1000) - 500;
  if (k === 1) return r() < 0.5 ? null : r() < 0.5;
  if (k === 2 || k === 3) {
    const s = FILL[Math.floor(r() * FILL.length)]!;
    return r() < 0.4 ? s + SECRETS[Math.floor(r() * SECRETS.length)]! : s;
  }
  if (k === 4) return Array.from({ length: Math.floor(r() * 4) }, () => randomJson(r, depth + 1));
  const o: Record<string, unknown> = {};
  const keys = ["index", "output_index", "content_index", "text", "delta", 'a"index', "type", "api_key", "password"];
  for (let i = 0, n = Math.floor(r() * 5); i < n; i++) o[keys[Math.floor(r() * keys.length)]!] = randomJson(r, depth + 1);
  return o;
}

const FLAWS = ["\\\u2028", "\\\u2029", "\\\r", '"', "\\", "\u00a0", "\u3000", "\ufeff", "\u2028", " ", "x", '\\"index', '"index"', "true"];

/** A JSON text with a few flaws put in at random places: most stay structure, so the two readers' literals are compared, not only a refusal. */
function flawed(r: () => number): string {
  let s = JSON.stringify(randomJson(r, 0));
  if (s[0] !== "{" && s[0] !== "[") s = `[${s}]`;
  for (let i = 0, n = 1 + Math.floor(r() * 2); i < n; i++) {
    const at = Math.floor(r() * s.length);
    s = s.slice(0, at) + FLAWS[Math.floor(r() * FLAWS.length)]! + s.slice(at);
  }
  return s;
}

describe("the content scan's hand-written literal reader gives what the expression gave", () => {
  it("vendor-shaped streams (Anthropic, Chat Completions, Responses) with credentials split at random places", () => {
    const r = seeded(20261202);
    for (let i = 0; i < 3000; i++) same(vendorStream(r));
  });

  it("random JSON events, spaced and unspaced, with index keys in odd places", () => {
    const r = seeded(7);
    for (let i = 0; i < 3000; i++) {
      const events: string[] = [];
      for (let j = 0, n = 1 + Math.floor(r() * 4); j < n; j++) {
        const json = JSON.stringify(randomJson(r, 0), null, r() < 0.3 ? 1 : undefined).replace(/\n/g, " ");
        events.push(`${r() < 0.5 ? "event: e\n" : ""}data: ${json}\n\n`);
      }
      same(events.join(""));
    }
  });

  it("lines of one shape in a row, only the last literal's body differing (quotes, backslashes, escapes in it)", () => {
    // The reader reuses a line's reading for the next line of the same shape: a body that closes
    // the literal early, escapes its closing quote or holds a key must be read afresh.
    const SHAPES: [string, string][] = [
      ['{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"', '"}}'],
      ['{"type":"response.output_text.delta","output_index":0,"content_index":2,"delta":"', '"}'],
      ['{ "a" : "', '" }'],
      ['["x","', '"]'],
      ['{"t":"', '","u":1}'],
      ['{"index":3,"t":"', '"'],
    ];
    const r = seeded(31);
    const body = () => {
      let s = "";
      for (let i = 0, n = Math.floor(r() * 6); i < n; i++) {
        const k = r();
        s +=
          k < 0.4
            ? JUNK[Math.floor(r() * JUNK.length)]!
            : k < 0.7
              ? JSON.stringify(FILL[Math.floor(r() * FILL.length)]!).slice(1, -1)
              : SECRETS[Math.floor(r() * SECRETS.length)]!.slice(0, 1 + Math.floor(r() * 30));
      }
      return s;
    };
    for (let i = 0; i < 3000; i++) {
      const [prefix, suffix] = SHAPES[Math.floor(r() * SHAPES.length)]!;
      const lines: string[] = [];
      for (let j = 0, n = 2 + Math.floor(r() * 6); j < n; j++) {
        const event = r() < 0.7 ? "event: d\n" : r() < 0.5 ? "event: e\n" : "";
        lines.push(`${event}data: ${prefix}${body()}${suffix}\n${r() < 0.8 ? "\n" : ""}`);
      }
      same(lines.join(""));
    }
  });

  it("malformed data lines: unclosed strings, stray quotes and backslashes, escapes before line terminators", () => {
    const r = seeded(99);
    for (let i = 0; i < 4000; i++) {
      const lines: string[] = [];
      for (let j = 0, n = 1 + Math.floor(r() * 3); j < n; j++) lines.push(`data: ${junkLine(r)}${r() < 0.2 ? "\r" : ""}\n\n`);
      same(lines.join(""));
    }
    for (let i = 0; i < 6000; i++) same(`data: ${flawed(r)}\n\n`);
    for (const line of [
      '{"a\\\u2028"b":"c"}',
      '{"a\\\r"}',
      '{"x":"y\\',
      '{"a":tr"x"ue}',
      '{"a\\"index": 5,"t":"v"}',
      '{"q\\"content_index"\u00a0:\u3000 12,"t":"ghp_0123456789abcdefghijABCDEFGHIJ012345"}',
      '{"index" :7}',
      '{"index":"7"}',
      '["","",""]',
      '{"":""}',
    ])
      same(`data: ${line}\n\n`);
  });
});
