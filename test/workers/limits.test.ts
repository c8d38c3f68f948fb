import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { BASE, enrollHost, hostCall, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let workspaceId: string;
let host: TestHost;

beforeAll(async () => {
  ({ token, workspaceId } = await seedWorkspace());
  host = await enrollHost(token);
});

const MIB = 1024 * 1024;

/** A chunked body of `total` bytes made as it is read; `pulled()` says how many bytes the reader took. */
function chunked(total: number, byte = 0x20) {
  let pulled = 0;
  const chunk = new Uint8Array(64 * 1024).fill(byte);
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (pulled >= total) return controller.close();
        pulled += chunk.length;
        controller.enqueue(chunk);
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, pulled: () => pulled };
}

const post = (path: string, body: BodyInit, headers: Record<string, string>) =>
  exports.default.fetch(`${BASE}${path}`, { method: "POST", headers, body, duplex: "half" } as RequestInit);

describe("body limits, before parsing and before authentication", () => {
  it("stops reading a chunked 24 MiB ingest at its 8 MiB limit", async () => {
    const body = chunked(24 * MIB);
    const res = await post("/v1/ingest", body.stream, { "content-type": "application/json" });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: "too_large" });
    expect(body.pulled()).toBeLessThanOrEqual(8 * MIB + 128 * 1024);
  });

  it("refuses a 30 MiB chunked JSON body to an operator route after 64 KiB, before the token is looked at", async () => {
    const body = chunked(30 * MIB);
    const res = await post("/v1/enrollment-tokens", body.stream, { "content-type": "application/json", authorization: "Bearer nope" });
    expect(res.status).toBe(413);
    expect(body.pulled()).toBeLessThanOrEqual(64 * 1024 + 128 * 1024);
  });

  it("refuses an enrollment whose declared length is over the limit without reading it", async () => {
    const body = chunked(30 * MIB);
    const res = await post("/v1/enroll", body.stream, { "content-type": "application/json", "content-length": String(30 * MIB) });
    expect(res.status).toBe(413);
    expect(body.pulled()).toBeLessThanOrEqual(64 * 1024);
  });
});

describe("Content-Type", () => {
  it("answers 415 to a JSON body sent as text/plain, and changes nothing", async () => {
    const res = await exports.default.fetch(`${BASE}/v1/workspaces/${workspaceId}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${token}`, "content-type": "text/plain" },
      body: JSON.stringify({ name: "renamed" }),
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ error: "unsupported_media_type" });
    expect(await (await op(token, `/v1/workspaces/${workspaceId}`)).json()).toMatchObject({ name: workspaceId });
  });

  it("answers 415 to a form-encoded token request instead of minting one with the default lifetime", async () => {
    const res = await exports.default.fetch(`${BASE}/v1/enrollment-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/x-www-form-urlencoded" },
      body: "ttl_minutes=5",
    });
    expect(res.status).toBe(415);
  });

  it("answers 415 to an ingest batch that is not sent as JSON", async () => {
    const run = new TestRun(host);
    run.start();
    const res = await hostCall(host, "POST", "/v1/ingest", JSON.stringify({ chains: [run.part()] }), { "content-type": "text/plain" });
    expect(res.status).toBe(415);
    expect(await env.CHAINS.get(env.CHAINS.idFromName(run.chain)).summary()).toBeNull();
  });

  it("still takes a body-less POST as {}", async () => {
    const res = await exports.default.fetch(`${BASE}/v1/enrollment-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(201);
  });
});

describe("policy bounds", () => {
  const base = { mode: "enforce", tools: [], default_tool_decision: "allow", models: null, budgets: [] };

  it("refuses a retention list longer than the roles there are, or naming one twice", async () => {
    const long = await op(token, `/v1/workspaces/${workspaceId}/policy`, {
      method: "PUT",
      json: { ...base, retention: { mode: "keep", keep: Array(100_000).fill("prompt") } },
    });
    expect(long.status).toBe(400);
    const twice = await op(token, `/v1/workspaces/${workspaceId}/policy`, {
      method: "PUT",
      json: { ...base, retention: { mode: "keep", keep: ["prompt", "prompt"] } },
    });
    expect(twice.status).toBe(400);
  });

  it("refuses a policy larger than a collector could take beside its own pause state (413)", async () => {
    const tools = Array.from({ length: 500 }, (_, i) => ({
      id: `t${i}`,
      tool: `tool-${i}-${"x".repeat(240)}`,
      command: "y".repeat(256),
      decision: "deny",
      reason: "z".repeat(512),
    }));
    const before = await (await op(token, `/v1/workspaces/${workspaceId}/policy`)).json();
    const res = await op(token, `/v1/workspaces/${workspaceId}/policy`, {
      method: "PUT",
      json: { ...base, tools, retention: { mode: "keep", keep: ["prompt"] } },
    });
    expect(res.status).toBe(413);
    expect(await (await op(token, `/v1/workspaces/${workspaceId}/policy`)).json()).toEqual(before);
  });
});
