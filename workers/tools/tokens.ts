import { and, eq, sql } from "drizzle-orm";
import { z } from "zod";
import { AgentName } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { newToken, parseToken, secretMatches } from "../lib/tokens.ts";

const DAY_MS = 24 * 60 * 60_000;

/** `POST /v1/tool-tokens`: a token for one agent to call the workspace's MCP endpoint directly. */
export const ToolTokenRequest = z.strictObject({
  agent: AgentName,
  ttl_days: z.number().int().min(1).max(365).default(30),
});

const t = schema.toolTokens;

/** Mints a tool token; the token itself is answered once and never stored. */
export async function mintToolToken(env: Env, workspaceId: string, req: z.infer<typeof ToolTokenRequest>, by: string) {
  const minted = newToken("oxt");
  const now = Date.now();
  const expiresMs = now + req.ttl_days * DAY_MS;
  await db(env)
    .insert(t)
    .values({ id: minted.id, workspaceId, agent: req.agent, secretHash: minted.secretHash, createdMs: now, expiresMs, createdBy: by });
  return { id: minted.id, agent: req.agent, token: minted.token, expires_ms: expiresMs };
}

/** The workspace's tool tokens (never their secrets). */
export async function listToolTokens(env: Env, workspaceId: string) {
  const rows = await db(env).select().from(t).where(eq(t.workspaceId, workspaceId)).all();
  return rows.map((r) => ({
    id: r.id,
    agent: r.agent,
    created_ms: r.createdMs,
    created_by: r.createdBy,
    expires_ms: r.expiresMs,
    revoked_ms: r.revokedMs,
  }));
}

/** Revokes a tool token of the workspace (again: a no-op). */
export async function revokeToolToken(env: Env, workspaceId: string, id: string): Promise<void> {
  const res = await db(env)
    .update(t)
    .set({ revokedMs: sql`coalesce(${t.revokedMs}, ${Date.now()})` })
    .where(and(eq(t.id, id), eq(t.workspaceId, workspaceId)))
    .run();
  if (res.meta.changes !== 1) throw notFound("tool token");
}

const unauthorized = (why: string) =>
  new AppError(401, "unauthorized", `A valid tool token (Authorization: Bearer oxt_…) or a host signature is required${why}.`);

/** A direct client's token checked: its workspace and agent. Revoked and expired tokens say so. */
export async function checkToolToken(env: Env, token: string, now: number): Promise<{ id: string; workspaceId: string; agent: string }> {
  const parsed = parseToken(token, "oxt");
  if (!parsed) throw unauthorized("");
  const row = await db(env).select().from(t).where(eq(t.id, parsed.id)).get();
  const ok = secretMatches(parsed.secret, row?.secretHash ?? "0".repeat(64));
  if (!row || !ok) throw unauthorized("");
  if (row.revokedMs !== null) throw unauthorized(`: this token was revoked at ${new Date(row.revokedMs).toISOString()}`);
  if (row.expiresMs <= now) throw unauthorized(`: this token expired at ${new Date(row.expiresMs).toISOString()}`);
  return { id: row.id, workspaceId: row.workspaceId, agent: row.agent };
}
