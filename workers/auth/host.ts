import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { z } from "zod";
import {
  AUTH_HEADERS,
  type AuthHeaders,
  authHeadersProblem,
  OPTIONAL_SIGNED_HEADERS,
  originOf,
  REQUEST_WINDOW_MS,
  requestSigningInput,
  SIGNED_HEADERS,
} from "../../protocol/index.ts";
import type { HostPart } from "../lib/host-policy.ts";
import type { HostCopy } from "../workspace/push-hub.ts";
import type { AppEnv } from "../request-body.ts";
import type { schema } from "../db/client.ts";
import { AppError } from "../errors.ts";

/** A host row. */
export type HostRow = typeof schema.hosts.$inferSelect;

/** Hono env of a host-signed route: the signing host is set by {@link hostAuth} (and its own policy part, when asked for). */
export type HostEnv = { Bindings: Env; Variables: AppEnv["Variables"] & { host: HostRow; hostPart?: HostPart; hostCopy?: HostCopy } };

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
    throw new AppError(500, "server_misconfigured", "The server's OXAGEN_ORIGIN is not a URL.", { cause });
  }
}

/** The host's own Durable Object (workers/host-object.ts). */
export function hostObject(env: Env, hostId: string) {
  return env.HOSTS.get(env.HOSTS.idFromName(hostId));
}

/** Has the host's object read its row from D1 again: every write of a host's key or status calls this after it. */
export async function hostChanged(env: Env, hostId: string): Promise<void> {
  await hostObject(env, hostId).refresh(hostId);
}

/**
 * Authenticates a collector call signed with its host key (protocol/auth.ts) over the exact body
 * bytes, the server's own origin ({@link serverOrigin}) and the headers the server acts on. The
 * host's own object checks the signature under the host's key and admits each nonce once, so a
 * replay inside the time window is refused too; no D1 statement is made. An unknown host and a
 * signature that does not verify get the same answer after the same work. The caller decides what
 * a suspended host may still do.
 */
async function authenticateHost(
  c: Context<HostEnv>,
  opts: { policyPart?: boolean; copy?: boolean },
): Promise<{ host: HostRow; part?: HostPart; copy?: HostCopy }> {
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
  const why = `the signature does not verify under an enrolled host's key for this server's origin, ${origin}`;
  if (h.host!.length > 64) throw refuse(why);
  const url = new URL(c.req.url);
  const headers = Object.fromEntries([...SIGNED_HEADERS, ...OPTIONAL_SIGNED_HEADERS].map((name) => [name, c.req.header(name) ?? null]));
  const input = requestSigningInput({
    origin,
    method: c.req.method,
    pathAndQuery: url.pathname + url.search,
    headers,
    body: c.var.body,
    hostId: h.host!,
    time: read.time,
    nonce: h.nonce!,
  });
  const answer = await hostObject(c.env, h.host!).authenticate(
    h.host!,
    { input, signature: h.signature!, nonce: h.nonce!, expiresMs: read.time + REQUEST_WINDOW_MS, now },
    { policyPart: opts.policyPart === true, copy: opts.copy === true },
  );
  if ("host" in answer) return answer;
  if (answer.refused === "replayed")
    throw new AppError(401, "replayed", "This request was received before; every request is signed afresh, with a new nonce.");
  throw refuse(why);
}

/**
 * The middleware of every host-signed route: {@link authenticateHost}, then a suspended host is
 * refused (403) unless `suspended` lets it through (its own policy, its unenrollment). Sets
 * `host`, and `hostPart` (the host's own policy part, from the same call) with `policyPart`, and
 * `hostCopy` (what the host's push hub holds of it) with `copy`.
 */
export function hostAuth(opts: { suspended?: "allowed"; policyPart?: boolean; copy?: boolean } = {}) {
  return createMiddleware<HostEnv>(async (c, next) => {
    const { host, part, copy } = await authenticateHost(c, opts);
    if (opts.suspended !== "allowed") requireActive(host);
    c.set("host", host);
    if (part) c.set("hostPart", part);
    if (copy) c.set("hostCopy", copy);
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
