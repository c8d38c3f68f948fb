// A streamed response is scanned by its content: each delta's text, joined per stream, so a
// credential the vendor split over two deltas is caught; what one delta holds is redacted to the
// same bytes the whole-text scan gives.
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../protocol/index.ts";
import { redact } from "../../protocol/redact.ts";
import { redactSse } from "../../collector/gateway/model/sse-redact.ts";
import { llmCallStep } from "../../collector/gateway/model/record.ts";
import { sse } from "../support/upstream.ts";

const KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUvWxYz012345-AbCdEfAA";
const GH = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

const anthropic = (texts: string[]) =>
  [
    sse("message_start", {
      type: "message_start",
      message: { id: "msg_1", model: "claude-sonnet-4-5", content: [], usage: { input_tokens: 3 } },
    }),
    sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    ...texts.map((text) => sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })),
    sse("content_block_stop", { type: "content_block_stop", index: 0 }),
    sse("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 9 } }),
    sse("message_stop", { type: "message_stop" }),
  ].join("");

const chat = (texts: string[]) =>
  [
    ...texts.map((content) => sse(null, { id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content } }] })),
    "data: [DONE]\n\n",
  ].join("");

const carried = (response: string) => ({
  vendor: "anthropic",
  model: "claude-sonnet-4-5",
  stream: true,
  status: 200,
  latencyMs: 1,
  ttfbMs: 1,
  request: Buffer.from('{"model":"claude-sonnet-4-5","stream":true}'),
  response: Buffer.from(response),
  seen: { usage: { input_tokens: 3, output_tokens: 9 } },
  clientClosed: false,
});

describe("a streamed response's credentials, found in its content", () => {
  it("a credential split over two deltas is caught: neither piece is in the body, one removal hashes the whole key", () => {
    const cut = 20;
    for (const stream of [
      anthropic(["your key is ", KEY.slice(0, cut), `${KEY.slice(cut)} ok`]),
      chat(["key: ", KEY.slice(0, cut), KEY.slice(cut)]),
    ]) {
      const out = redactSse(stream);
      expect(out.text).not.toContain(KEY.slice(0, cut));
      expect(out.text).not.toContain(KEY.slice(cut, cut + 30));
      expect(out.text).toContain("[REDACTED:anthropic_api_key]");
      expect(out.redactions).toEqual([{ kind: "anthropic_api_key", sha256: sha256Hex(KEY) }]);
      // Still the vendor's stream: every event parses.
      for (const line of out.text.split("\n").filter((l) => l.startsWith("data: {"))) expect(() => JSON.parse(line.slice(6))).not.toThrow();
    }
  });

  it("the llm_call's response body and its removals come from the content scan", () => {
    const step = llmCallStep(carried(anthropic(["token ", GH.slice(0, 9), GH.slice(9)])), null);
    const body = Buffer.from(step.bodies[1]!.bytes!).toString();
    expect(body).not.toContain(GH.slice(0, 9));
    expect(body).not.toContain(GH.slice(9));
    expect(step.payload).toMatchObject({ redactions: [{ role: "llm_response", kind: "github_token", sha256: sha256Hex(GH) }] });
  });

  it("what one delta holds is redacted to the bytes the whole-text scan gives; framing alone is not scanned into a match", () => {
    const texts = [
      [`here: ${KEY}`],
      ["password=hunter2hunter2", " and ", `Bearer ${"a".repeat(12)}b1c2d3e4f5g6`],
      [`mongodb://app:s3cr3tpass@db.internal/x ${GH}`],
      ["nothing to see", " here"],
      ['{"api_key": "abcd1234efgh5678"}'],
    ];
    for (const t of texts)
      for (const stream of [anthropic(t), chat(t)]) {
        expect(redactSse(stream)).toEqual(redact(stream));
      }
  });

  it("a quoted value in the text is read unescaped: the value alone is removed (the raw text's escapes made two bad cuts)", () => {
    const stream = anthropic(['password="hunter2hunter2"']);
    const out = redactSse(stream);
    expect(out.text).toContain('"text":"password=\\"[REDACTED:password]\\""');
    expect(out.redactions).toEqual([{ kind: "password", sha256: sha256Hex("hunter2hunter2") }]);
    expect(redact(stream).redactions).toHaveLength(2);
  });

  it("a data line that is not JSON, a comment and an odd event line are scanned as they are", () => {
    const stream = `: ${GH}\n\nevent: x ${GH}\ndata: {"a":1}\n\ndata: plain ${KEY}\n\n`;
    const out = redactSse(stream);
    expect(out.text).not.toContain(GH);
    expect(out.text).not.toContain(KEY);
    expect(out.redactions.map((r) => r.kind)).toEqual(["github_token", "github_token", "anthropic_api_key"]);
  });

  it("escaped text maps back to where it stands: a key after an escaped quote and a newline", () => {
    const stream = anthropic([`say "hi"\n\u0001\u00e9 ${KEY.slice(0, 30)}`, KEY.slice(30)]);
    const out = redactSse(stream);
    expect(out.text).not.toContain(KEY.slice(0, 30));
    expect(out.text).toContain('"text":"say \\"hi\\"\\n\\u0001\u00e9 [REDACTED:anthropic_api_key]"');
    expect(out.text).toContain('"text":""');
  });

  it("a credential whose JSON escapes leave a lone surrogate is removed and hashed as UTF-8 writes it; the call is recorded", () => {
    // \ud800 alone: the model's text as the vendor escaped it, no UTF-8 form until replaced by U+FFFD.
    const line = `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"password=ab\\ud800cdefghij1234"}}\n\n`;
    const out = redactSse(line);
    expect(out.text).toContain('"text":"password=[REDACTED:password]"');
    expect(out.redactions).toEqual([{ kind: "password", sha256: sha256Hex("ab\ufffdcdefghij1234") }]);
    const step = llmCallStep(
      carried(anthropic([]).replace("event: content_block_stop", `${line.slice(0, -1)}event: content_block_stop`)),
      null,
    );
    expect(step.kind).toBe("llm_call");
    expect(Buffer.from(step.bodies[1]!.bytes!).toString()).not.toContain("cdefghij1234");
  });
});
