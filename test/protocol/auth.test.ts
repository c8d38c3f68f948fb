import { describe, expect, it } from "vitest";
import { AUTH_HEADERS, fromUtf8, requestProblem, requestSigningInput, signRequest, utf8 } from "../../protocol/index.ts";
import { HOST_PUBLIC, HOST_SECRET } from "../support/sample-run.ts";

const REQUEST = {
  origin: "HTTPS://Oxagen.Example:443/ignored/path",
  method: "put",
  pathAndQuery: "/v1/bodies/abc?x=1",
  hostId: "h-1",
  time: 1_767_225_600_000,
  nonce: "00112233445566778899aabbccddeeff",
  headers: { "content-type": " application/octet-stream\t", "x-oxagen-run": "run_1", "x-oxagen-role": "tool_output" },
  body: utf8("hello"),
};

describe("signed requests", () => {
  it("sign exactly the canonical request docs/api.md spells out", () => {
    const text = fromUtf8(requestSigningInput(REQUEST));
    const canonical = [
      "PUT",
      "https://oxagen.example",
      "/v1/bodies/abc?x=1",
      "1767225600000",
      "00112233445566778899aabbccddeeff",
      "h-1",
      "content-type:application/octet-stream",
      "if-none-match:",
      "x-oxagen-role:tool_output",
      "x-oxagen-run:run_1",
      "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
    ].join("\n");
    const type = "application/vnd.oxagen.request.v2";
    expect(text).toBe(`DSSEv1 ${type.length} ${type} ${canonical.length} ${canonical}`);
  });

  it("verify only with every covered part unchanged", () => {
    const headers = signRequest(HOST_SECRET, REQUEST);
    const h = {
      host: headers[AUTH_HEADERS.host]!,
      time: headers[AUTH_HEADERS.time]!,
      nonce: headers[AUTH_HEADERS.nonce]!,
      signature: headers[AUTH_HEADERS.signature]!,
    };
    const { hostId: _h, time: _t, nonce: _n, ...rest } = REQUEST;
    const now = REQUEST.time + 1000;
    expect(requestProblem(HOST_PUBLIC, h, rest, now)).toBeNull();
    expect(requestProblem(HOST_PUBLIC, h, { ...rest, origin: "https://oxagen.example" }, now)).toBeNull();
    for (const changed of [
      { ...rest, origin: "https://other.example" },
      { ...rest, method: "POST" },
      { ...rest, pathAndQuery: "/v1/bodies/abd?x=1" },
      { ...rest, headers: { ...rest.headers, "x-oxagen-role": "prompt" } },
      { ...rest, headers: { ...rest.headers, "if-none-match": '"x"' } },
      { ...rest, body: utf8("hellO") },
    ])
      expect(requestProblem(HOST_PUBLIC, h, changed, now)).toBe("request signature does not verify");
    expect(requestProblem(HOST_PUBLIC, { ...h, nonce: "xyz" }, rest, now)).toContain("nonce");
    expect(requestProblem(HOST_PUBLIC, h, rest, now + 10 * 60_000)).toContain("window");
  });
});

describe("the optional signed header x-oxagen-agent", () => {
  it("adds its line only when sent, so a request without it signs as before, and is covered when sent", () => {
    const without = fromUtf8(requestSigningInput(REQUEST));
    expect(without).not.toContain("x-oxagen-agent");
    const withAgent = fromUtf8(requestSigningInput({ ...REQUEST, headers: { ...REQUEST.headers, "x-oxagen-agent": " claude-code " } }));
    expect(withAgent).toContain("x-oxagen-run:run_1\nx-oxagen-agent:claude-code\n2cf24dba");
    const sent = { ...REQUEST, headers: { ...REQUEST.headers, "x-oxagen-agent": "claude-code" } };
    const headers = signRequest(HOST_SECRET, sent);
    const h = {
      host: headers[AUTH_HEADERS.host]!,
      time: headers[AUTH_HEADERS.time]!,
      nonce: headers[AUTH_HEADERS.nonce]!,
      signature: headers[AUTH_HEADERS.signature]!,
    };
    const { hostId: _h, time: _t, nonce: _n, ...rest } = sent;
    const now = REQUEST.time + 1000;
    expect(requestProblem(HOST_PUBLIC, h, rest, now)).toBeNull();
    expect(requestProblem(HOST_PUBLIC, h, { ...rest, headers: { ...rest.headers, "x-oxagen-agent": "codex" } }, now)).not.toBeNull();
    expect(requestProblem(HOST_PUBLIC, h, { ...rest, headers: REQUEST.headers }, now)).not.toBeNull();
  });
});
