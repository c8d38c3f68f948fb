import { and, eq, isNull, lt, or } from "drizzle-orm";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { z } from "zod";
import {
  AUTH_HEADERS,
  type AuthHeaders,
  authHeadersProblem,
  fromHex,
  hostChainId,
  OPTIONAL_SIGNED_HEADERS,
  originOf,
  publicKeyOf,
  REQUEST_WINDOW_MS,
  requestProblem,
  SIGNED_HEADERS,
} from "../../protocol/index.ts";
import type { AppEnv } from "../request-body.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";

/** A host row. */
export type HostRow = typeof schema.hosts.$inferSelect;

/** Hono env of a host-signed route: the signing host is set by {@link hostAuth}. */
export type HostEnv = { Bindings: Env; Variables: AppEnv["Variables"] & { host: HostRow } };

const SEEN_EVERY_MS = 30_000;

let stand_in: Uint8Array | null = null;
// A key no host holds: an unknown host's request is checked against it, so it costs what a known one does.
function standInKey(): Uint8Array {
  stand_in ??= publicKeyOf(new Uint8Array(32).fill(0x5a));
  return stand_in;
}

const refuse = (why: string) => new AppError(401, "bad_signature", `The request is not signed by an enrolled host: ${why}.`);

/**
 * The origin hosts sign their requests for: this server's own, `OXAGEN_ORIGIN` (wrangler.toml, or
 * `--var` under `wrangler dev`), never the request's URL or `Host` header, so a request signed for
 * another origin and relayed here with that origin's `Host` is refused.
 */
export function serverOrigin(env: Env): string {
  try {
    return originOf(env.OXAGEN_ORIGIN);
  } catch (cause) {
    throw new AppError(500, "misconfigured", "The server's OXAGEN_ORIGIN is not a URL.", { cause });
  }
}

/**
 * Authenticates a collector call signed with its host key (protocol/auth.ts) over the exact body
 * bytes, the server's own origin ({@link serverOrigin}) and the headers the server acts on. An
 * unknown host and a signature that does not verify get the same answer after the same work. Each
 * nonce is admitted once (in the host's own chain object), so a replay inside the time window is
 * refused too. The caller decides what a suspended host may still do.
 */
async function authenticateHost(c: Context<HostEnv>): Promise<HostRow> {
  const h: AuthHeaders = {
    host: c.req.header(AUTH_HEADERS.host) ?? null,
    time: c.req.header(AUTH_HEADERS.time) ?? null,
    nonce: c.req.header(AUTH_HEADERS.nonce) ?? null,
    signature: c.req.header(AUTH_HEADERS.signature) ?? null,
  };
  const now = Date.now();
  const origin = serverOrigin(c.env);
  const read = authHeadersProblem(h, now);
  if ("problem" in read) throw refuse(read.problem);
  const row = h.host!.length <= 64 ? await db(c.env).select().from(schema.hosts).where(eq(schema.hosts.id, h.host!)).get() : undefined;
  const host = row && row.status !== "unenrolled" ? row : null;
  const url = new URL(c.req.url);
  const headers = Object.fromEntries([...SIGNED_HEADERS, ...OPTIONAL_SIGNED_HEADERS].map((name) => [name, c.req.header(name) ?? null]));
  const request = { origin, method: c.req.method, pathAndQuery: url.pathname + url.search, headers, body: c.var.body };
  const problem = requestProblem(host ? fromHex(host.publicKey, 32) : standInKey(), h, request, now);
  if (problem || !host) throw refuse(`the signature does not verify under an enrolled host's key for this server's origin, ${origin}`);
  const hostChain = c.env.CHAINS.get(c.env.CHAINS.idFromName(hostChainId(host.id)));
  if (!(await hostChain.admitNonce(h.nonce!, read.time + REQUEST_WINDOW_MS, now))) {
    throw new AppError(401, "replayed", "This request was received before; every request is signed afresh, with a new nonce.");
  }
  if (host.lastSeenMs !== null && host.lastSeenMs >= now - SEEN_EVERY_MS) return host;
  await db(c.env)
    .update(schema.hosts)
    .set({ lastSeenMs: now })
    .where(and(eq(schema.hosts.id, host.id), or(isNull(schema.hosts.lastSeenMs), lt(schema.hosts.lastSeenMs, now - SEEN_EVERY_MS))));
  return host;
}

/**
 * The middleware of every host-signed route: {@link authenticateHost}, then a suspended host is
 * refused (403) unless `suspended` lets it through (its own policy, its unenrollment). Sets `host`.
 */
export function hostAuth(opts: { suspended?: "allowed" } = {}) {
  return createMiddleware<HostEnv>(async (c, next) => {
    const host = await authenticateHost(c);
    if (opts.suspended !== "allowed") requireActive(host);
    c.set("host", host);
    await next();
  });
}

/** One of a host's earlier keys, as `hosts.retired_keys` holds it. */
export const RetiredKey = z.strictObject({
  key_id: z.string(),
  pub: z.string(),
  not_before_ms: z.number().int(),
  not_after_ms: z.number().int(),
});
/** One of {@link RetiredKey}. */
export type RetiredKey = z.infer<typeof RetiredKey>;

/** A host's earlier keys; a row that does not hold them is a fault (500). */
export function retiredKeysOf(host: Pick<HostRow, "retiredKeys">): RetiredKey[] {
  const parsed = z.array(RetiredKey).safeParse(JSON.parse(host.retiredKeys));
  if (!parsed.success) throw new AppError(500, "internal", "The host's key history is damaged.", { cause: parsed.error });
  return parsed.data;
}

/** Every key the host holds or held, the current one first (what a chain's first lock may be signed with). */
export function hostKeysOf(host: HostRow): { keyId: string; pub: string }[] {
  return [{ keyId: host.keyId, pub: host.publicKey }, ...retiredKeysOf(host).map((k) => ({ keyId: k.key_id, pub: k.pub }))];
}

/** Refuses a suspended host with 403. */
export function requireActive(host: HostRow): void {
  if (host.status === "suspended") throw new AppError(403, "host_suspended", "This computer is suspended by an operator.");
}
