import { and, eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db, schema } from "../db/client.ts";
import { notFound } from "../errors.ts";
import { newToken } from "../lib/tokens.ts";
import { valid } from "../validate.ts";

const EnrollmentTokenRequest = z.strictObject({
  ttl_minutes: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 60)
    .default(60),
});
const TokenRequest = z.strictObject({ name: z.string().min(1).max(128) });
const IdParam = z.object({ id: z.string().regex(/^[0-9a-f]{16}$/, "not a token id") });

export const tokens = new Hono<OperatorEnv>()
  .use("/v1/tokens/*", operatorAuth)
  .use("/v1/tokens", operatorAuth)
  .use("/v1/enrollment-tokens", operatorAuth)
  .post("/v1/enrollment-tokens", valid("json", EnrollmentTokenRequest), async (c) => {
    const { ttl_minutes } = c.req.valid("json");
    const t = newToken("oxe");
    const now = Date.now();
    const expiresMs = now + ttl_minutes * 60_000;
    await db(c.env)
      .insert(schema.enrollmentTokens)
      .values({ id: t.id, workspaceId: c.var.workspaceId, secretHash: t.secretHash, createdMs: now, expiresMs });
    return c.json({ id: t.id, token: t.token, expires_ms: expiresMs }, 201);
  })
  .post("/v1/tokens", valid("json", TokenRequest), async (c) => {
    const { name } = c.req.valid("json");
    const t = newToken("oxo");
    await db(c.env)
      .insert(schema.operatorTokens)
      .values({ id: t.id, workspaceId: c.var.workspaceId, name, secretHash: t.secretHash, createdMs: Date.now() });
    return c.json({ id: t.id, name, token: t.token }, 201);
  })
  .get("/v1/tokens", async (c) => {
    const rows = await db(c.env)
      .select({
        id: schema.operatorTokens.id,
        name: schema.operatorTokens.name,
        created_ms: schema.operatorTokens.createdMs,
        revoked_ms: schema.operatorTokens.revokedMs,
      })
      .from(schema.operatorTokens)
      .where(eq(schema.operatorTokens.workspaceId, c.var.workspaceId))
      .all();
    return c.json({ tokens: rows });
  })
  .delete("/v1/tokens/:id", valid("param", IdParam), async (c) => {
    const { id } = c.req.valid("param");
    const res = await db(c.env)
      .update(schema.operatorTokens)
      .set({ revokedMs: Date.now() })
      .where(and(eq(schema.operatorTokens.id, id), eq(schema.operatorTokens.workspaceId, c.var.workspaceId)))
      .run();
    if (res.meta.changes !== 1) throw notFound("token");
    return c.json({ id, revoked: true });
  });
