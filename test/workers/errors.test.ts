import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../protocol/index.ts";
import type { ChainObject } from "../../workers/chain-object.ts";
import { db, schema } from "../../workers/db/client.ts";
import { eq } from "drizzle-orm";
import { enrollHost, hostCall, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let host: TestHost;
let workspaceId: string;

beforeAll(async () => {
  let token: string;
  ({ token, workspaceId } = await seedWorkspace());
  host = await enrollHost(token);
});

const stub = (chain: string) => env.CHAINS.get(env.CHAINS.idFromName(chain));

describe("errors that must not hide", () => {
  it("answers a chain object's unknown fault with a logged 500, never a 200 'retryable' ack", async () => {
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    await runInDurableObject(stub(run.chain), (_o: ChainObject, state) => {
      state.storage.sql.exec("UPDATE state SET facts = 'not json'");
    });
    run.tool();
    const res = await ingest(host, [run.part()]);
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ error: "internal" });
  });

  it("says why a lock is not a lock instead of a bare 'not a lock'", async () => {
    const run = new TestRun(host);
    run.start();
    const lock = run.lock();
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(lock.payload)).reverse()));
    const res = await ingest(host, [run.part(run.frames, [{ payload: reordered, sig: lock.sig }])]);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error: "invalid_batch",
      issues: [{ chain: run.chain, at: "chains[0].locks[0]", problem: expect.stringContaining("members are not in the order") }],
    });
  });

  it("refuses with a 500 to read a workspace whose retention row is damaged; a body is checked against the policy's retention, never that row", async () => {
    const { token, workspaceId: ws } = await seedWorkspace(undefined, { mode: "keep", keep: ["prompt"] });
    const h = await enrollHost(token);
    const run = new TestRun(h);
    run.start();
    await ingest(h, [run.part()]);
    await db(env).update(schema.workspaces).set({ retentionKeep: "{oops" }).where(eq(schema.workspaces.id, ws));
    const put = (role: string, text: string) =>
      hostCall(h, "PUT", `/v1/bodies/${sha256Hex(text)}`, text, {
        "x-oxagen-run": run.chain,
        "x-oxagen-role": role,
        "content-type": "application/octet-stream",
      });
    // The policy (validated when it was stored) keeps prompts only: a damaged row never widens that to every role.
    expect((await put("tool_output", "tool output")).status).toBe(409);
    expect(await env.BODIES.head(`bodies/${ws}/${sha256Hex("tool output")}`)).toBeNull();
    expect((await put("prompt", "a prompt")).status).toBe(201);
    expect((await op(token, `/v1/workspaces/${ws}`)).status).toBe(500);
  });
});
