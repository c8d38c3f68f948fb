import { and, eq, isNull } from "drizzle-orm";
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import { bytesToHex, equalBytes, fromUtf8, utf8 } from "../../protocol/index.ts";
import { checkOperatorToken, liveToken, type OperatorEnv, requireScope, touchToken } from "../auth/operator.ts";
import { mediaType } from "../request-body.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { newToken, parseToken, secretMatches } from "../lib/tokens.ts";

/** A session lives this long at most, and never past its operator token's expiry. */
export const SESSION_MS = 12 * 60 * 60_000;

/** The console's Hono env: the operator's workspace, token and scope, plus the session's id and CSRF token. */
export type ConsoleEnv = {
  Bindings: Env;
  Variables: OperatorEnv["Variables"] & { sessionId: string; csrf: string };
};

/** The sign-in page. */
export const SIGN_IN = "/console/sign-in";
/** The sign-out form's target. */
export const SIGN_OUT = "/console/sign-out";

// Over HTTPS the cookie is Secure and `__Host-` prefixed; plain HTTP is allowed only on a loopback
// address (wrangler dev), where a Secure cookie would never come back.
function secure(c: Context): boolean {
  const url = new URL(c.req.url);
  return !(url.protocol === "http:" && /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(url.hostname));
}

/** The session cookie's name: `__Host-` prefixed whenever the cookie is Secure. */
export function sessionCookie(c: Context): string {
  return secure(c) ? "__Host-oxagen_session" : "oxagen_session";
}

/** The sign-in form's CSRF cookie (double submit: there is no session yet to hold it). */
export function preCookie(c: Context): string {
  return secure(c) ? "__Host-oxagen_signin" : "oxagen_signin";
}

const cookieOptions = (c: Context, maxAgeS: number) =>
  ({ path: "/", httpOnly: true, sameSite: "Strict", secure: secure(c), maxAge: maxAgeS }) as const;

function randomHex(bytes: number): string {
  return bytesToHex(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** Compares two strings in constant time (for their length). */
export function sameSecret(a: string, b: string): boolean {
  const x = utf8(a);
  const y = utf8(b);
  return x.length === y.length && equalBytes(x, y);
}

/** Drops one of the console's cookies (a `__Host-` one must be dropped as Secure). */
export function dropCookie(c: Context, name: string): void {
  deleteCookie(c, name, { path: "/", secure: name.startsWith("__Host-") });
}

/** A fresh CSRF token for the sign-in form, set as its cookie. */
export function signInCsrf(c: Context): string {
  const token = randomHex(16);
  setCookie(c, preCookie(c), token, cookieOptions(c, 60 * 60));
  return token;
}

/**
 * Signs in with a pasted operator token: checks it as the API does, stores a session that names
 * the token (so it dies with it), and sets the session cookie. The token itself is never stored.
 */
export async function signIn(c: Context<ConsoleEnv>, token: string): Promise<void> {
  const now = Date.now();
  const row = await checkOperatorToken(c.env, token, now);
  const s = newToken("oxs");
  const expiresMs = Math.min(now + SESSION_MS, row.expiresMs ?? Number.MAX_SAFE_INTEGER);
  await db(c.env)
    .insert(schema.consoleSessions)
    .values({
      id: s.id,
      secretHash: s.secretHash,
      workspaceId: row.workspaceId,
      tokenId: row.id,
      csrf: randomHex(24),
      createdMs: now,
      expiresMs,
    });
  await touchToken(c.env, row, now);
  setCookie(c, sessionCookie(c), s.token, cookieOptions(c, Math.max(1, Math.floor((expiresMs - now) / 1000))));
  dropCookie(c, preCookie(c));
}

/** Signs out: the session is revoked in D1 (the cookie alone could be replayed) and the cookie dropped. */
export async function signOut(c: Context<ConsoleEnv>): Promise<void> {
  const s = c.var.sessionId;
  await db(c.env)
    .update(schema.consoleSessions)
    .set({ revokedMs: Date.now() })
    .where(and(eq(schema.consoleSessions.id, s), isNull(schema.consoleSessions.revokedMs)));
  dropCookie(c, sessionCookie(c));
}

/** Whether a request comes from a page of this origin, when the browser says where it comes from. */
function sameOrigin(c: Context): boolean {
  const site = c.req.header("sec-fetch-site");
  if (site !== undefined && site !== "same-origin" && site !== "none") return false;
  const origin = c.req.header("origin");
  return origin === undefined || origin === new URL(c.req.url).origin;
}

/** The form fields of a POST (application/x-www-form-urlencoded, read under the body limit). */
export function formOf(c: Context<ConsoleEnv>): URLSearchParams {
  if (mediaType(c.req.header("content-type")) !== "application/x-www-form-urlencoded")
    throw new AppError(415, "unsupported_media_type", "A console form is sent as application/x-www-form-urlencoded.");
  try {
    return new URLSearchParams(fromUtf8(c.var.body));
  } catch {
    throw new AppError(400, "invalid_request", "The form is not UTF-8.");
  }
}

/** Refuses (403) a state-changing request whose CSRF token is not the expected one, or that comes from another site. */
export function requireCsrf(c: Context, form: URLSearchParams, expected: string): void {
  const given = form.get("csrf") ?? "";
  if (!sameOrigin(c) || expected.length === 0 || !sameSecret(given, expected))
    throw new AppError(403, "csrf", "This form is out of date or came from another site; reload the page and try again.");
}

/** Why a browser was sent to sign in: each has one fixed sentence on the sign-in page. */
export const SIGNED_OUT = {
  none: "",
  signed_out: "You signed out.",
  expired: "Your session expired; sign in again.",
  token: "The operator token you signed in with was revoked or has expired; sign in with a live one.",
} as const;
/** One of the keys of {@link SIGNED_OUT}. */
export type SignedOutWhy = keyof typeof SIGNED_OUT;

/** A request the console sends to sign-in instead of answering. */
export class SignedOut extends Error {
  readonly why: SignedOutWhy;
  constructor(why: SignedOutWhy) {
    super(SIGNED_OUT[why]);
    this.name = "SignedOut";
    this.why = why;
  }
}

/**
 * The session of every console page but sign-in: the cookie's session must exist, be neither
 * revoked nor expired, and its operator token must still be live. Otherwise the browser goes to
 * sign-in. A POST needs the session's CSRF token (checked by each form handler via {@link requireCsrf})
 * and an admin token.
 */
export const consoleSession = createMiddleware<ConsoleEnv>(async (c, next) => {
  const parsed = parseToken(getCookie(c, sessionCookie(c)) ?? "", "oxs");
  if (!parsed) throw new SignedOut("none");
  const d = db(c.env);
  const row = await d
    .select({ session: schema.consoleSessions, token: schema.operatorTokens })
    .from(schema.consoleSessions)
    .innerJoin(schema.operatorTokens, eq(schema.operatorTokens.id, schema.consoleSessions.tokenId))
    .where(eq(schema.consoleSessions.id, parsed.id))
    .get();
  const now = Date.now();
  if (!row || !secretMatches(parsed.secret, row.session.secretHash)) throw new SignedOut("none");
  if (row.session.revokedMs !== null) throw new SignedOut("signed_out");
  if (row.session.expiresMs <= now) throw new SignedOut("expired");
  try {
    liveToken(row.token, now);
  } catch {
    throw new SignedOut("token");
  }
  // Signing out is the one change a read-only operator may make.
  if (c.req.path !== SIGN_OUT) requireScope(row.token.scope, c.req.method);
  c.set("workspaceId", row.session.workspaceId);
  c.set("tokenId", row.token.id);
  c.set("scope", row.token.scope);
  c.set("sessionId", row.session.id);
  c.set("csrf", row.session.csrf);
  await touchToken(c.env, row.token, now);
  await next();
});

/**
 * A console page to go back to after signing in: a path under /console with a plain query, never
 * another origin (`//host`, a backslash) or the sign-in itself; null otherwise.
 */
export function safeNext(next: string | null | undefined): string | null {
  if (!next || next.length > 512 || !/^\/console(?:\/[A-Za-z0-9_\-/]*)?(?:\?[A-Za-z0-9_\-=&%.]*)?$/.test(next)) return null;
  return next.includes("//") || next.startsWith(SIGN_IN) ? null : next;
}

/** Where a signed-out browser is sent, and the page it goes back to once signed in. */
export function signInUrl(why: SignedOutWhy, next: string | null = null): string {
  const query = new URLSearchParams();
  if (why !== "none") query.set("why", why);
  const back = safeNext(next);
  if (back) query.set("next", back);
  const q = query.toString();
  return q ? `${SIGN_IN}?${q}` : SIGN_IN;
}
