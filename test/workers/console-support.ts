import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { db, schema } from "../../workers/db/client.ts";
import { newToken, parseToken } from "../../workers/lib/tokens.ts";

/**
 * A console session for an operator token, written as sign-in writes it: the cookie header that
 * carries it and the session's CSRF token (the sign-in flow itself is console.test.ts's).
 */
export async function signInCookie(operatorToken: string): Promise<{ cookie: string; csrf: string }> {
  const parsed = parseToken(operatorToken, "oxo");
  if (!parsed) throw new Error("not an operator token");
  const token = await db(env).select().from(schema.operatorTokens).where(eq(schema.operatorTokens.id, parsed.id)).get();
  if (!token) throw new Error("no such operator token");
  const s = newToken("oxs");
  const csrf = crypto.randomUUID().replaceAll("-", "");
  const now = Date.now();
  await db(env)
    .insert(schema.consoleSessions)
    .values({
      id: s.id,
      secretHash: s.secretHash,
      workspaceId: token.workspaceId,
      tokenId: token.id,
      csrf,
      createdMs: now,
      expiresMs: now + 3_600_000,
    });
  return { cookie: `__Host-oxagen_session=${s.token}`, csrf };
}
