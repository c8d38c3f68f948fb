import { and, eq, isNull, lt, or } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../body.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { parseToken, secretMatches } from "../lib/tokens.ts";

/** A token's scope: `admin` may change things, `read` may only read. */
export type Scope = "admin" | "read";

/** Hono env of an operator route: the token's workspace, id and scope are set by {@link operatorAuth}. */
export type OperatorEnv = {
  Bindings: Env;
  Variables: AppEnv["Variables"] & { workspaceId: string; tokenId: string; scope: Scope };
};

const USED_EVERY_MS = 60_000;
const unauthorized = (why = "") =>
  new AppError(401, "unauthorized", `A valid operator API token is required (Authorization: Bearer oxo_…)${why}.`);

/**
 * Bearer API token: found by its id, its secret compared by hash in constant time, scoped to one
 * workspace. A revoked or expired token says so (and who revoked it), so its holder notices. A
 * `read` token may only GET; anything else is a 403.
 */
export const operatorAuth = createMiddleware<OperatorEnv>(async (c, next) => {
  // Two sub-apps' middleware may match one path (/v1/hosts/* and /v1/hosts/:id/agents): check once.
  if (c.get("tokenId")) return next();
  const header = c.req.header("authorization") ?? "";
  const m = /^Bearer (\S+)$/.exec(header);
  const parsed = m ? parseToken(m[1]!, "oxo") : null;
  if (!parsed) throw unauthorized();
  const d = db(c.env);
  const row = await d.select().from(schema.operatorTokens).where(eq(schema.operatorTokens.id, parsed.id)).get();
  const ok = secretMatches(parsed.secret, row?.secretHash ?? "0".repeat(64));
  if (!row || !ok) throw unauthorized();
  const now = Date.now();
  if (row.revokedMs !== null)
    throw unauthorized(`: this token was revoked at ${new Date(row.revokedMs).toISOString()} by token ${row.revokedBy ?? "unknown"}`);
  if (row.expiresMs !== null && row.expiresMs <= now)
    throw unauthorized(`: this token expired at ${new Date(row.expiresMs).toISOString()}`);
  if (row.scope === "read" && c.req.method !== "GET" && c.req.method !== "HEAD")
    throw new AppError(403, "insufficient_scope", "This token may only read; changing anything takes an admin token.");
  c.set("workspaceId", row.workspaceId);
  c.set("tokenId", row.id);
  c.set("scope", row.scope);
  if (row.lastUsedMs === null || row.lastUsedMs < now - USED_EVERY_MS) {
    const t = schema.operatorTokens;
    await d
      .update(t)
      .set({ lastUsedMs: now })
      .where(and(eq(t.id, row.id), or(isNull(t.lastUsedMs), lt(t.lastUsedMs, now - USED_EVERY_MS))));
  }
  await next();
});
