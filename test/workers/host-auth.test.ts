import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { newSecretKey, sha256Hex, signRequest, useFastVerify, utf8 } from "../../protocol/index.ts";
import { useNativeCrypto } from "../../workers/native-crypto.ts";
import { BASE, enrollHost, hostCall, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
});

/** A signed request, kept so it can be sent again byte for byte. */
function signed(h: TestHost, method: string, path: string, body: string, headers: Record<string, string>, origin = BASE) {
  const auth = signRequest(h.secret, { origin, method, pathAndQuery: path, hostId: h.id, headers, body: utf8(body) });
  return () =>
    exports.default.fetch(`${BASE}${path}`, { method, headers: { ...headers, ...auth }, body: method === "GET" ? undefined : body });
}

describe("one answer for an unknown host and a bad signature", () => {
  it("answers both the same, after the same signature check", async () => {
    let checks = 0;
    useFastVerify(() => {
      checks++;
      return false;
    });
    try {
      const body = JSON.stringify({ agents: [] });
      const json = { "content-type": "application/json" };
      const stranger = { ...host, secret: newSecretKey() };
      const wrongKey = await signed(stranger, "POST", "/v1/host", body, json)();
      const afterKnown = checks;
      const unknown = await signed({ ...host, id: "h-nobody-here" }, "POST", "/v1/host", body, json)();
      expect(checks - afterKnown).toBe(afterKnown);
      expect(afterKnown).toBeGreaterThan(0);
      expect(unknown.status).toBe(wrongKey.status);
      expect(await unknown.json()).toEqual(await wrongKey.json());
    } finally {
      useFastVerify(null);
      useNativeCrypto();
    }
  });
});

describe("replays", () => {
  it("refuses a request sent a second time, and takes the same batch re-signed (an idempotent retry)", async () => {
    const run = new TestRun(host);
    run.start();
    const body = JSON.stringify({ chains: [run.part()] });
    const send = signed(host, "POST", "/v1/ingest", body, { "content-type": "application/json" });
    expect((await send()).status).toBe(200);
    const replay = await send();
    expect(replay.status).toBe(401);
    expect(await replay.json()).toMatchObject({ error: "replayed" });
    const retry = await ingest(host, [run.part()]);
    expect(retry.status).toBe(200);
    expect(retry.body.chains[0]).toMatchObject({ stored: 1, duplicates: [0] });
  });

  it("does not let an old report, replayed, flip an agent back to degraded", async () => {
    const report = (hooks_ok: boolean) =>
      signed(
        host,
        "POST",
        "/v1/host",
        JSON.stringify({ agents: [{ name: "claude-code", pending_frames: 0, oldest_pending_ms: null, hooks_ok }] }),
        {
          "content-type": "application/json",
        },
      );
    const broken = report(false);
    expect((await broken()).status).toBe(200);
    expect((await report(true)()).status).toBe(200);
    expect((await broken()).status).toBe(401);
    const agents = (await (await op(token, `/v1/hosts/${host.id}/agents`)).json()) as { agents: { name: string; reason: string }[] };
    expect(agents.agents.find((a) => a.name === "claude-code")?.reason).not.toContain("hooks");
  });
});

describe("what the signature covers", () => {
  it("refuses a captured body upload whose role header was changed", async () => {
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    const text = "a body";
    const headers = { "content-type": "application/octet-stream", "x-oxagen-run": run.chain, "x-oxagen-role": "tool_output" };
    const auth = signRequest(host.secret, {
      origin: BASE,
      method: "PUT",
      pathAndQuery: `/v1/bodies/${sha256Hex(text)}`,
      hostId: host.id,
      headers,
      body: utf8(text),
    });
    const res = await exports.default.fetch(`${BASE}/v1/bodies/${sha256Hex(text)}`, {
      method: "PUT",
      headers: { ...headers, ...auth, "x-oxagen-role": "prompt" },
      body: text,
    });
    expect(res.status).toBe(401);
    expect(await env.BODIES.head(`bodies/${host.workspaceId}/${sha256Hex(text)}`)).toBeNull();
  });

  it("refuses a request signed for another server's origin", async () => {
    const res = await signed(host, "GET", "/v1/host", "", {}, "https://other.example")();
    expect(res.status).toBe(401);
    expect((await hostCall(host, "GET", "/v1/host")).status).toBe(200);
  });

  it("checks the signed origin against its own, not the request's Host: a relay at another origin stores nothing", async () => {
    const run = new TestRun(host);
    run.start();
    const body = JSON.stringify({ chains: [run.part()] });
    const headers = { "content-type": "application/json" };
    const evil = "http://evil.example";
    const auth = signRequest(host.secret, {
      origin: evil,
      method: "POST",
      pathAndQuery: "/v1/ingest",
      hostId: host.id,
      headers,
      body: utf8(body),
    });
    // Sent to evil.example's URL, so the request's Host (and URL) name the origin it was signed for.
    const res = await exports.default.fetch(`${evil}/v1/ingest`, { method: "POST", headers: { ...headers, ...auth }, body });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "bad_signature" });
    expect(await env.CHAINS.get(env.CHAINS.idFromName(run.chain)).summary()).toBeNull();
    expect((await op(token, `/v1/runs/${run.chain}`)).status).toBe(404);
  });
});
