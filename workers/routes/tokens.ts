import { and, eq, isNull, ne, sql } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db, schema } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { DAY_MS, EnrollmentTtlMinutes, mintEnrollmentToken, newToken, OPERATOR_TOKEN_DAYS } from "../lib/tokens.ts";
import { valid } from "../validate.ts";

const EnrollmentTokenRequest = z.strictObject({ ttl_minutes: EnrollmentTtlMinutes.default(60) });
const TokenRequest = z.strictObject({
  name: z.string().min(1).max(128),
  scope: z.enum(["admin", "read"]).default("read"),
  ttl_days: z.number().int().min(1).max(365).default(OPERATOR_TOKEN_DAYS),
});
const IdParam = z.object({ id: z.string().regex(/^[0-9a-f]{16}$/, "not a token id") });

const ot = schema.operatorTokens;
const et = schema.enrollmentTokens;

export const tokens = new Hono<OperatorEnv>()
  .use("/v1/tokens/*", operatorAuth)
  .use("/v1/tokens", operatorAuth)
  .use("/v1/enrollment-tokens", operatorAuth)
  .use("/v1/enrollment-tokens/*", operatorAuth)
  .post("/v1/enrollment-tokens", valid("json", EnrollmentTokenRequest), async (c) => {
    const { ttl_minutes } = c.req.valid("json");
    return c.json(await mintEnrollmentToken(c.env, c.var.workspaceId, c.var.tokenId, ttl_minutes), 201);
  })
  .get("/v1/enrollment-tokens", async (c) => {
    const rows = await db(c.env)
      .select({
        id: et.id,
        created_ms: et.createdMs,
        created_by: et.createdBy,
        expires_ms: et.expiresMs,
        used_ms: et.usedMs,
        used_by: et.usedBy,
        revoked_ms: et.revokedMs,
      })
      .from(et)
      .where(eq(et.workspaceId, c.var.workspaceId))
      .all();
    return c.json({ tokens: rows });
  })
  .delete("/v1/enrollment-tokens/:id", valid("param", IdParam), async (c) => {
    const { id } = c.req.valid("param");
    const d = db(c.env);
    const row = await d
      .select()
      .from(et)
      .where(and(eq(et.id, id), eq(et.workspaceId, c.var.workspaceId)))
      .get();
    if (!row) throw notFound("enrollment token");
    if (row.usedMs !== null) throw new AppError(409, "already_used", `The token enrolled host ${row.usedBy}; unenroll the host instead.`);
    await d
      .update(et)
      .set({ revokedMs: sql`coalesce(${et.revokedMs}, ${Date.now()})` })
      .where(eq(et.id, id));
    return c.json({ id, revoked: true });
  })
  .post("/v1/tokens", valid("json", TokenRequest), async (c) => {
    const { name, scope, ttl_days } = c.req.valid("json");
    const t = newToken("oxo");
    const now = Date.now();
    const expiresMs = now + ttl_days * DAY_MS;
    await db(c.env).insert(ot).values({
      id: t.id,
      workspaceId: c.var.workspaceId,
      name,
      scope,
      secretHash: t.secretHash,
      createdMs: now,
      expiresMs,
      createdBy: c.var.tokenId,
    });
    return c.json({ id: t.id, name, scope, token: t.token, expires_ms: expiresMs }, 201);
  })
  .get("/v1/tokens/current", async (c) => {
    const row = await db(c.env).select().from(ot).where(eq(ot.id, c.var.tokenId)).get();
    if (!row) throw notFound("token");
    return c.json({
      id: row.id,
      name: row.name,
      scope: row.scope,
      workspace: row.workspaceId,
      created_ms: row.createdMs,
      expires_ms: row.expiresMs,
    });
  })
  .get("/v1/tokens", async (c) => {
    const rows = await db(c.env)
      .select({
        id: ot.id,
        name: ot.name,
        scope: ot.scope,
        created_ms: ot.createdMs,
        created_by: ot.createdBy,
        expires_ms: ot.expiresMs,
        last_used_ms: ot.lastUsedMs,
        revoked_ms: ot.revokedMs,
        revoked_by: ot.revokedBy,
      })
      .from(ot)
      .where(eq(ot.workspaceId, c.var.workspaceId))
      .all();
    return c.json({ tokens: rows });
  })
  .delete("/v1/tokens/:id", valid("param", IdParam), async (c) => {
    const { id } = c.req.valid("param");
    const d = db(c.env);
    const now = Date.now();
    const target = await d
      .select()
      .from(ot)
      .where(and(eq(ot.id, id), eq(ot.workspaceId, c.var.workspaceId)))
      .get();
    if (!target) throw notFound("token");
    if (target.revokedMs !== null) return c.json({ id, revoked: true });
    // The workspace keeps one admin token that works: the API alone can never lock its operators out.
    const liveAdmin = and(
      eq(ot.workspaceId, c.var.workspaceId),
      eq(ot.scope, "admin"),
      isNull(ot.revokedMs),
      sql`(${ot.expiresMs} IS NULL OR ${ot.expiresMs} > ${now})`,
    );
    const res = await d
      .update(ot)
      .set({ revokedMs: now, revokedBy: c.var.tokenId })
      .where(
        and(
          eq(ot.id, id),
          isNull(ot.revokedMs),
          sql`(${target.scope} <> 'admin' OR EXISTS (SELECT 1 FROM ${ot} WHERE ${and(liveAdmin, ne(ot.id, id))}))`,
        ),
      )
      .run();
    if (res.meta.changes !== 1)
      throw new AppError(
        409,
        "last_admin",
        "This is the workspace's last working admin token; mint another admin token before revoking it.",
      );
    return c.json({ id, revoked: true, revoked_by: c.var.tokenId });
  });
