// The bytes a gateway call's bodies are hashed and kept as (collector/gateway/model/record.ts): the
// vendor's own bytes when they are valid UTF-8 and nothing was redacted, else the text they decode
// to (U+FFFD for an invalid sequence), redacted, encoded again — the same digest either way.
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../protocol/index.ts";
import { type Carried, llmCallStep } from "../../collector/gateway/model/record.ts";

const KEY = "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

function call(request: Buffer, response: Buffer, stream = false): Carried {
  return {
    vendor: "anthropic",
    model: "claude-sonnet-4-5",
    stream,
    status: 200,
    latencyMs: 1,
    ttfbMs: 1,
    request,
    response,
    seen: { id: "msg_1", model: "claude-sonnet-4-5", usage: { input_tokens: 1, output_tokens: 1 } },
    clientClosed: false,
  };
}
const bodiesOf = (c: Carried) => llmCallStep(c, null).bodies;

describe("a gateway call's body bytes", () => {
  it("are the vendor's own bytes when they are valid UTF-8 and hold no credential", () => {
    const request = Buffer.from(JSON.stringify({ model: "m", messages: [{ role: "user", content: "héllo \u{1F600}" }] }));
    const response = Buffer.from('event: message_stop\ndata: {"type":"message_stop","text":"\u00e9\u{1F600}"}\n\n');
    const [req, res] = bodiesOf(call(request, response, true));
    expect(Buffer.from(req!.bytes!).equals(request)).toBe(true);
    expect(Buffer.from(res!.bytes!).equals(response)).toBe(true);
    expect(req!.ref.sha256).toBe(sha256Hex(request));
    expect(res!.ref.sha256).toBe(sha256Hex(response));
  });

  it("are the decoded text encoded again when the bytes are not valid UTF-8", () => {
    const request = Buffer.concat([Buffer.from('{"model":"m","x":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
    const [req] = bodiesOf(call(request, Buffer.from("{}")));
    const decoded = Buffer.from(request.toString("utf8"), "utf8");
    expect(decoded.equals(request)).toBe(false);
    expect(Buffer.from(req!.bytes!).equals(decoded)).toBe(true);
    expect(req!.ref.sha256).toBe(sha256Hex(decoded));
  });

  it("are the redacted text when a credential was cut out", () => {
    const request = Buffer.from(JSON.stringify({ model: "m", key: KEY }));
    const [req] = bodiesOf(call(request, Buffer.from("{}")));
    const text = Buffer.from(req!.bytes!).toString("utf8");
    expect(text).not.toContain(KEY);
    expect(text).toContain("[REDACTED:anthropic_api_key]");
    expect(req!.ref.sha256).toBe(sha256Hex(Buffer.from(text)));
  });
});
