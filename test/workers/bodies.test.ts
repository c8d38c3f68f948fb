import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../protocol/index.ts";
import { enrollHost, hostCall, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;
let run: TestRun;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
  run = new TestRun(host);
  run.start();
  await ingest(host, [run.part()]);
});

const put = (h: TestHost, sha: string, body: string | Uint8Array, chain = run.chain, role = "tool_output") =>
  hostCall(h, "PUT", `/v1/bodies/${sha}`, body, {
    "x-oxagen-run": chain,
    "x-oxagen-role": role,
    "content-type": "application/octet-stream",
  });

describe("PUT /v1/bodies/:sha256", () => {
  it("stores a body in R2 by its hash once; a second PUT is a no-op", async () => {
    const text = "3 passed in 0.42s";
    const sha = sha256Hex(text);
    const first = await put(host, sha, text);
    expect(first.status).toBe(201);
    expect(await (await env.BODIES.get(`bodies/${host.workspaceId}/${sha}`))?.text()).toBe(text);
    const second = await put(host, sha, text);
    expect(second.status).toBe(200);
    expect(await second.json()).toEqual({ sha256: sha, stored: false, duplicate: true });
  });

  it("keeps each workspace's bodies apart: another tenant cannot learn that a body is already stored", async () => {
    const text = "a body both tenants happen to hold";
    const sha = sha256Hex(text);
    expect((await put(host, sha, text)).status).toBe(201);
    const { token: other } = await seedWorkspace();
    const theirHost = await enrollHost(other);
    const theirRun = new TestRun(theirHost);
    theirRun.start();
    await ingest(theirHost, [theirRun.part()]);
    const theirs = await hostCall(theirHost, "PUT", `/v1/bodies/${sha}`, text, {
      "x-oxagen-run": theirRun.chain,
      "x-oxagen-role": "tool_output",
      "content-type": "application/octet-stream",
    });
    expect(theirs.status).toBe(201);
    expect(await theirs.json()).toEqual({ sha256: sha, stored: true, duplicate: false });
    expect(await env.BODIES.head(`bodies/${theirHost.workspaceId}/${sha}`)).not.toBeNull();
  });

  it("refuses a body whose hash is not the one in the path, storing nothing", async () => {
    const sha = sha256Hex("something else");
    const res = await put(host, sha, "not that");
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "hash_mismatch" });
    expect(await env.BODIES.head(`bodies/${host.workspaceId}/${sha}`)).toBeNull();
  });

  it("refuses a body over 1 MiB with 413", async () => {
    const big = new Uint8Array(1024 * 1024 + 1);
    const res = await put(host, sha256Hex(big), big);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: "too_large" });
  });

  it("refuses a body that still holds a credential and records body_refused on the run", async () => {
    const text = "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n";
    const sha = sha256Hex(text);
    const res = await put(host, sha, text);
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ error: "body_refused" });
    expect(await env.BODIES.head(`bodies/${host.workspaceId}/${sha}`)).toBeNull();
    const view = (await (await op(token, `/v1/runs/${run.chain}`)).json()) as { gaps: { kind: string; bodies?: string[] }[] };
    expect(view.gaps).toContainEqual(expect.objectContaining({ kind: "body_refused", bodies: [sha] }));
  });

  it("refuses a body for another host's run with 404 and bad headers with 400", async () => {
    const { token: t2 } = await seedWorkspace();
    const other = await enrollHost(t2);
    const text = "hello";
    expect((await put(other, sha256Hex(text), text)).status).toBe(404);
    expect((await put(host, sha256Hex(text), text, run.chain, "nonsense")).status).toBe(400);
    expect((await put(host, "ABC", text)).status).toBe(400);
  });

  it("refuses bodies a digest_only workspace or its retention does not keep", async () => {
    const { token: t3 } = await seedWorkspace(undefined, { mode: "digest_only" });
    const h3 = await enrollHost(t3);
    const r3 = new TestRun(h3);
    r3.start();
    await ingest(h3, [r3.part()]);
    const res = await put(h3, sha256Hex("x"), "x", r3.chain);
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ error: "not_retained" });
    const { token: t4 } = await seedWorkspace(undefined, { mode: "keep", keep: ["prompt"] });
    const h4 = await enrollHost(t4);
    const r4 = new TestRun(h4);
    r4.start();
    await ingest(h4, [r4.part()]);
    expect((await put(h4, sha256Hex("y"), "y", r4.chain, "tool_output")).status).toBe(409);
    expect((await put(h4, sha256Hex("y"), "y", r4.chain, "prompt")).status).toBe(201);
  });
});

describe("GET /v1/bodies/:sha256 (an operator downloads a body)", () => {
  it("answers the stored bytes and role to the workspace's operator, and 404 to anyone else's", async () => {
    const text = "the body an operator downloads";
    const sha = sha256Hex(text);
    expect((await put(host, sha, text, run.chain, "tool_input")).status).toBe(201);
    const got = await op(token, `/v1/bodies/${sha}`);
    expect(got.status).toBe(200);
    expect(got.headers.get("content-type")).toBe("application/octet-stream");
    expect(got.headers.get("x-oxagen-role")).toBe("tool_input");
    expect(await got.text()).toBe(text);
    const { token: other } = await seedWorkspace();
    expect((await op(other, `/v1/bodies/${sha}`)).status).toBe(404);
    expect((await op(token, `/v1/bodies/${sha256Hex("never stored")}`)).status).toBe(404);
    expect((await op(token, "/v1/bodies/not-a-hash")).status).toBe(400);
    expect((await op("oxo_nope", `/v1/bodies/${sha}`)).status).toBe(401);
  });
});
