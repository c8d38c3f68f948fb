import { eq } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../body.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { parseToken, secretMatches } from "../lib/tokens.ts";

/** Hono env of an operator route: the token's workspace is set by {@link operatorAuth}. */
export type OperatorEnv = { Bindings: Env; Variables: AppEnv["Variables"] & { workspaceId: string; tokenId: string } };

const unauthorized = () => new AppError(401, "unauthorized", "A valid operator API token is required (Authorization: Bearer oxo_…).");

/** Bearer API token: found by its id, its secret compared by hash in constant time, scoped to one workspace. */
export const operatorAuth = createMiddleware<OperatorEnv>(async (c, next) => {
  // Two sub-apps' middleware may match one path (/v1/hosts/* and /v1/hosts/:id/agents): check once.
  if (c.get("tokenId")) return next();
  const header = c.req.header("authorization") ?? "";
  const m = /^Bearer (\S+)$/.exec(header);
  const parsed = m ? parseToken(m[1]!, "oxo") : null;
  if (!parsed) throw unauthorized();
  const row = await db(c.env).select().from(schema.operatorTokens).where(eq(schema.operatorTokens.id, parsed.id)).get();
  const ok = secretMatches(parsed.secret, row?.secretHash ?? "0".repeat(64));
  if (!row || !ok || row.revokedMs !== null) throw unauthorized();
  c.set("workspaceId", row.workspaceId);
  c.set("tokenId", row.id);
  await next();
});
