import { and, eq, isNull, lt, or } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../request-body.ts";
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

type TokenRow = typeof schema.operatorTokens.$inferSelect;

/**
 * An operator token (`oxo_…`) checked: found by its id, its secret compared by hash in constant
 * time. A revoked or expired token says so (and who revoked it), so its holder notices. The API's
 * bearer header and the console's sign-in both go through here.
 */
export async function checkOperatorToken(env: Env, token: string, now: number): Promise<TokenRow> {
  const parsed = parseToken(token, "oxo");
  if (!parsed) throw unauthorized();
  const row = await db(env).select().from(schema.operatorTokens).where(eq(schema.operatorTokens.id, parsed.id)).get();
  const ok = secretMatches(parsed.secret, row?.secretHash ?? "0".repeat(64));
  if (!row || !ok) throw unauthorized();
  return liveToken(row, now);
}

/** The token itself when it is neither revoked nor expired; otherwise a 401 that says which. */
export function liveToken(row: TokenRow, now: number): TokenRow {
  if (row.revokedMs !== null)
    throw unauthorized(`: this token was revoked at ${new Date(row.revokedMs).toISOString()} by token ${row.revokedBy ?? "unknown"}`);
  if (row.expiresMs !== null && row.expiresMs <= now)
    throw unauthorized(`: this token expired at ${new Date(row.expiresMs).toISOString()}`);
  return row;
}

/** Notes a token's use, at most once a minute. */
export async function touchToken(env: Env, row: TokenRow, now: number): Promise<void> {
  if (row.lastUsedMs !== null && row.lastUsedMs >= now - USED_EVERY_MS) return;
  const t = schema.operatorTokens;
  await db(env)
    .update(t)
    .set({ lastUsedMs: now })
    .where(and(eq(t.id, row.id), or(isNull(t.lastUsedMs), lt(t.lastUsedMs, now - USED_EVERY_MS))));
}

/** A `read` token may only GET; anything else is a 403. */
export function requireScope(scope: Scope, method: string): void {
  if (scope === "read" && method !== "GET" && method !== "HEAD")
    throw new AppError(403, "insufficient_scope", "This token may only read; changing anything takes an admin token.");
}

/** Bearer API token, scoped to one workspace (see {@link checkOperatorToken}). */
export const operatorAuth = createMiddleware<OperatorEnv>(async (c, next) => {
  // Two sub-apps' middleware may match one path (/v1/hosts/* and /v1/hosts/:id/agents): check once.
  if (c.get("tokenId")) return next();
  const m = /^Bearer (\S+)$/.exec(c.req.header("authorization") ?? "");
  if (!m) throw unauthorized();
  const now = Date.now();
  const row = await checkOperatorToken(c.env, m[1]!, now);
  requireScope(row.scope, c.req.method);
  c.set("workspaceId", row.workspaceId);
  c.set("tokenId", row.id);
  c.set("scope", row.scope);
  await touchToken(c.env, row, now);
  await next();
});
