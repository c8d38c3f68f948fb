import { and, eq, isNull, lt, or } from "drizzle-orm";
import type { Context } from "hono";
import type { AppEnv } from "../body.ts";
import { AUTH_HEADERS, fromHex, requestProblem } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";

/** A host row. */
export type HostRow = typeof schema.hosts.$inferSelect;

const SEEN_EVERY_MS = 30_000;

/**
 * Authenticates a collector call signed with its host key (protocol/auth.ts) over the exact body
 * bytes. Unknown host and bad signature are both 401 with the same sentence. The caller decides
 * what a suspended host may still do (it may read its policy, to learn it is suspended).
 */
export async function authenticateHost(c: Context<AppEnv>): Promise<HostRow> {
  const body = c.var.body;
  const headers = {
    host: c.req.header(AUTH_HEADERS.host) ?? null,
    time: c.req.header(AUTH_HEADERS.time) ?? null,
    signature: c.req.header(AUTH_HEADERS.signature) ?? null,
  };
  const refuse = (why: string) => new AppError(401, "bad_signature", `The request is not signed by an enrolled host: ${why}.`);
  if (!headers.host || !headers.time || !headers.signature) throw refuse("missing host signature headers");
  if (headers.host.length > 64) throw refuse("unknown host");
  const host = await db(c.env).select().from(schema.hosts).where(eq(schema.hosts.id, headers.host)).get();
  if (!host) throw refuse("unknown host");
  const url = new URL(c.req.url);
  const now = Date.now();
  const problem = requestProblem(fromHex(host.publicKey, 32), headers, c.req.method, url.pathname + url.search, body, now);
  if (problem) throw refuse(problem);
  if (host.lastSeenMs !== null && host.lastSeenMs >= now - SEEN_EVERY_MS) return host;
  await db(c.env)
    .update(schema.hosts)
    .set({ lastSeenMs: now })
    .where(and(eq(schema.hosts.id, host.id), or(isNull(schema.hosts.lastSeenMs), lt(schema.hosts.lastSeenMs, now - SEEN_EVERY_MS))));
  return host;
}

/** Refuses a suspended host with 403. */
export function requireActive(host: HostRow): void {
  if (host.status === "suspended") throw new AppError(403, "host_suspended", "This computer is suspended by an operator.");
}
