import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { bytesToHex, keyIdFor, publicKeyOf, signRequest, utf8 } from "../../protocol/index.ts";
import { HOST_SECRET, SERVER_KEY_ID } from "../support/sample-run.ts";
import { BASE, enrollHost, hostCall, ingest, op, seedWorkspace, TestRun } from "./support.ts";

let token: string;
let workspaceId: string;
const enroll = (body: unknown) =>
  exports.default.fetch(`${BASE}/v1/enroll`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
const newEnrollToken = async () =>
  ((await (await op(token, "/v1/enrollment-tokens", { json: { ttl_minutes: 5 } })).json()) as { token: string }).token;
const PUB = bytesToHex(publicKeyOf(HOST_SECRET));

beforeAll(async () => {
  ({ token, workspaceId } = await seedWorkspace());
});

describe("enrollment", () => {
  it("enrolls a host once per token and answers the server key", async () => {
    const t = await newEnrollToken();
    const res = await enroll({ token: t, public_key: PUB, hostname: "laptop", harnesses: ["claude-code", "my-agent"] });
    expect(res.status).toBe(201);
    const answer = (await res.json()) as { host_id: string; workspace: string; server_key: { key_id: string } };
    expect(answer).toMatchObject({ workspace: workspaceId, server_key: { key_id: SERVER_KEY_ID } });
    const again = await enroll({ token: t, public_key: PUB, hostname: "laptop2", harnesses: [] });
    expect(again.status).toBe(401);
    expect(await again.json()).toMatchObject({ error: "invalid_token" });
    const hosts = (await (await op(token, "/v1/hosts")).json()) as { hosts: { id: string; key_id: string }[] };
    expect(hosts.hosts).toEqual([expect.objectContaining({ id: answer.host_id, key_id: keyIdFor(publicKeyOf(HOST_SECRET)) })]);
  });

  it("refuses small-order and non-canonical keys without using the token", async () => {
    const t = await newEnrollToken();
    const identity = `01${"00".repeat(31)}`;
    const small = await enroll({ token: t, public_key: identity, hostname: "x", harnesses: [] });
    expect(small.status).toBe(400);
    expect(await small.json()).toMatchObject({ error: "bad_public_key" });
    const nonCanonical = `ed${"ff".repeat(30)}7f`;
    expect((await enroll({ token: t, public_key: nonCanonical, hostname: "x", harnesses: [] })).status).toBe(400);
    expect((await enroll({ token: t, public_key: PUB, hostname: "x", harnesses: [] })).status).toBe(201);
  });

  it("refuses an expired, unknown or malformed token", async () => {
    const made = (await (await op(token, "/v1/enrollment-tokens", { json: { ttl_minutes: 1 } })).json()) as { token: string };
    const forged = `${made.token.slice(0, -4)}0000`;
    expect((await enroll({ token: forged, public_key: PUB, hostname: "x", harnesses: [] })).status).toBe(401);
    expect((await enroll({ token: `oxe_${"0".repeat(70)}`, public_key: PUB, hostname: "x", harnesses: [] })).status).toBe(401);
    expect((await enroll({ token: made.token, public_key: "zz", hostname: "x", harnesses: [] })).status).toBe(400);
    const bad = await exports.default.fetch(`${BASE}/v1/enroll`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: "invalid_request" });
  });
});

describe("operator tokens", () => {
  it("refuses a missing, malformed, wrong or revoked token", async () => {
    expect((await exports.default.fetch(`${BASE}/v1/runs`)).status).toBe(401);
    expect((await op("oxo_nope", "/v1/runs")).status).toBe(401);
    const wrong = token.slice(0, -1) + (token.endsWith("0") ? "1" : "0");
    const res = await op(wrong, "/v1/runs");
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "unauthorized" });
    const made = (await (await op(token, "/v1/tokens", { json: { name: "ci" } })).json()) as { id: string; token: string };
    expect((await op(made.token, "/v1/runs")).status).toBe(200);
    expect((await op(token, `/v1/tokens/${made.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await op(made.token, "/v1/runs")).status).toBe(401);
    const list = (await (await op(token, "/v1/tokens")).json()) as { tokens: { id: string; revoked_ms: number | null }[] };
    expect(list.tokens.find((t) => t.id === made.id)?.revoked_ms).toBeTypeOf("number");
  });
});

describe("host signatures", () => {
  it("refuses unsigned, stale, tampered and unknown-host requests", async () => {
    const host = await enrollHost(token);
    const run = new TestRun(host);
    run.start();
    const body = JSON.stringify({ chains: [run.part()] });
    const post = (headers: Record<string, string>, b = body) =>
      exports.default.fetch(`${BASE}/v1/ingest`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: b });
    expect((await post({})).status).toBe(401);
    const sign = (hostId: string, time: number) =>
      signRequest(HOST_SECRET, {
        origin: BASE,
        method: "POST",
        pathAndQuery: "/v1/ingest",
        hostId,
        headers: { "content-type": "application/json" },
        body: utf8(body),
        time,
      });
    expect((await post(sign(host.id, Date.now() - 10 * 60_000))).status).toBe(401);
    const good = sign(host.id, Date.now());
    expect((await post(good, body.replace("agent_start", "agent_stopx"))).status).toBe(401);
    const unknown = sign("no-such-host", Date.now());
    const res = await post(unknown);
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: "bad_signature" });
    expect(await (await op(token, `/v1/runs/${run.chain}`)).status).toBe(404);
    expect((await post(sign(host.id, Date.now()))).status).toBe(200);
  });

  it("refuses a suspended host on ingest (403) and lists it in the policy; resume lets it back", async () => {
    const host = await enrollHost(token);
    const s = await op(token, `/v1/hosts/${host.id}/suspend`, { method: "POST" });
    expect(await s.json()).toMatchObject({ status: "suspended" });
    const run = new TestRun(host);
    run.start();
    const refused = await ingest(host, [run.part()]);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: "host_suspended" });
    const policy = (await (await hostCall(host, "GET", "/v1/policy")).json()) as { payload: string };
    expect(JSON.parse(policy.payload).suspended_hosts).toContain(host.id);
    expect(await (await hostCall(host, "GET", "/v1/host")).json()).toMatchObject({ error: "host_suspended" });
    await op(token, `/v1/hosts/${host.id}/resume`, { method: "POST" });
    expect((await ingest(host, [run.part()])).status).toBe(200);
  });
});
