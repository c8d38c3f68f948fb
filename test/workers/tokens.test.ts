import { env, exports } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { bytesToHex, newSecretKey, publicKeyOf } from "../../protocol/index.ts";
import { db, schema } from "../../workers/db/client.ts";
import { BASE, op, seedWorkspace } from "./support.ts";

let token: string;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
});

type Minted = { id: string; token: string; scope: string; expires_ms: number };
const mint = async (body: Record<string, unknown>, by = token) => (await (await op(by, "/v1/tokens", { json: body })).json()) as Minted;
const listTokens = async () => ((await (await op(token, "/v1/tokens")).json()) as { tokens: Record<string, unknown>[] }).tokens;

describe("operator tokens", () => {
  it("expire: a minted token carries an expiry (90 days unless asked) and is refused after it", async () => {
    const t = await mint({ name: "ci" });
    expect(t.expires_ms).toBeGreaterThan(Date.now() + 89 * 24 * 60 * 60_000);
    expect(t.expires_ms).toBeLessThanOrEqual(Date.now() + 90 * 24 * 60 * 60_000);
    expect((await op(t.token, "/v1/runs")).status).toBe(200);
    await db(env)
      .update(schema.operatorTokens)
      .set({ expiresMs: Date.now() - 1 })
      .where(eq(schema.operatorTokens.id, t.id));
    const res = await op(t.token, "/v1/runs");
    expect(res.status).toBe(401);
    expect(((await res.json()) as { message: string }).message).toContain("expired");
    expect((await op(token, "/v1/tokens", { json: { name: "x", ttl_days: 400 } })).status).toBe(400);
  });

  it("have scopes: a read token reads, and may not mint, revoke or change anything (403)", async () => {
    const reader = await mint({ name: "dashboard", scope: "read" });
    expect(reader.scope).toBe("read");
    expect((await op(reader.token, "/v1/runs")).status).toBe(200);
    expect((await op(reader.token, "/v1/tokens")).status).toBe(200);
    for (const [path, init] of [
      ["/v1/tokens", { json: { name: "escalate", scope: "admin" } }],
      ["/v1/enrollment-tokens", { json: {} }],
      [`/v1/tokens/${reader.id}`, { method: "DELETE" }],
    ] as const) {
      const res = await op(reader.token, path, init);
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ error: "insufficient_scope" });
    }
  });

  it("record when each was last used, who minted it and who revoked it; the revoked holder is told who", async () => {
    const admin = await mint({ name: "second admin", scope: "admin" });
    const victim = await mint({ name: "victim", scope: "read" }, admin.token);
    await op(victim.token, "/v1/runs");
    expect((await op(admin.token, `/v1/tokens/${victim.id}`, { method: "DELETE" })).status).toBe(200);
    const row = (await listTokens()).find((t) => t.id === victim.id)!;
    expect(row).toMatchObject({ created_by: admin.id, revoked_by: admin.id, scope: "read" });
    expect(row.last_used_ms).toBeTypeOf("number");
    const refused = await op(victim.token, "/v1/runs");
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { message: string }).message).toContain(`revoked at`);
  });

  it("never lets the last working admin token be revoked, so one token cannot lock every operator out", async () => {
    const { token: first } = await seedWorkspace();
    const second = await mint({ name: "rogue", scope: "admin" }, first);
    const firstId = first.split("_")[1]!;
    expect((await op(second.token, `/v1/tokens/${firstId}`, { method: "DELETE" })).status).toBe(200);
    const last = await op(second.token, `/v1/tokens/${second.id}`, { method: "DELETE" });
    expect(last.status).toBe(409);
    expect(await last.json()).toMatchObject({ error: "last_admin" });
  });
});

describe("enrollment tokens", () => {
  const enroll = (t: string, hostname = "box") =>
    exports.default.fetch(`${BASE}/v1/enroll`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: t, public_key: bytesToHex(publicKeyOf(newSecretKey())), hostname, harnesses: ["claude-code"] }),
    });
  const mintEnroll = async () => (await (await op(token, "/v1/enrollment-tokens", { json: {} })).json()) as { id: string; token: string };

  it("can be listed and revoked; a revoked one enrolls nothing, a used one cannot be revoked", async () => {
    const a = await mintEnroll();
    const b = await mintEnroll();
    const list = (await (await op(token, "/v1/enrollment-tokens")).json()) as { tokens: { id: string; used_ms: number | null }[] };
    expect(list.tokens.map((t) => t.id)).toEqual(expect.arrayContaining([a.id, b.id]));
    expect((await op(token, `/v1/enrollment-tokens/${a.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await enroll(a.token)).status).toBe(401);
    expect((await enroll(b.token)).status).toBe(201);
    expect((await op(token, `/v1/enrollment-tokens/${b.id}`, { method: "DELETE" })).status).toBe(409);
    const { token: other } = await seedWorkspace();
    expect((await op(other, `/v1/enrollment-tokens/${b.id}`, { method: "DELETE" })).status).toBe(404);
  });

  it("is not spent when the host cannot be written", async () => {
    const t = await mintEnroll();
    await env.DB.exec(
      "CREATE TRIGGER refuse_host BEFORE INSERT ON hosts WHEN NEW.hostname = 'doomed' BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
    );
    try {
      const failed = await enroll(t.token, "doomed");
      expect(failed.status).toBe(500);
    } finally {
      await env.DB.exec("DROP TRIGGER refuse_host");
    }
    const row = await db(env).select().from(schema.enrollmentTokens).where(eq(schema.enrollmentTokens.id, t.id)).get();
    expect(row).toMatchObject({ usedMs: null, usedBy: null });
    expect((await enroll(t.token, "fine")).status).toBe(201);
  });
});

describe("GET /v1/tokens/current", () => {
  it("says which token a caller holds: its workspace and scope (what oxagen login records)", async () => {
    const { token: admin, workspaceId: ws } = await seedWorkspace();
    const minted = (await (await op(admin, "/v1/tokens", { json: { name: "reader", scope: "read" } })).json()) as {
      id: string;
      token: string;
    };
    const res = await op(minted.token, "/v1/tokens/current");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: minted.id, name: "reader", scope: "read", workspace: ws });
  });
});
