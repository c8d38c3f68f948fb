import { z } from "zod";
import { bytesToHex, equalBytes, fromHex, isHex, sha256, TOKEN_SHAPE, utf8 } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";

/** The kinds of token (protocol `TOKEN_SHAPE`): operator, enrollment, console session, device code, tool (an agent's, for the MCP endpoint). */
export type TokenKind = "oxo" | "oxe" | "oxs" | "oxd" | "oxt";

/** A bearer token `<prefix>_<id>_<secret>`: the id finds the row, the secret is compared by hash. */
export interface NewToken {
  id: string;
  token: string;
  secretHash: string;
}

function randomHex(bytes: number): string {
  return bytesToHex(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** A fresh token; only its secret's hash is stored. */
export function newToken(prefix: TokenKind): NewToken {
  const id = randomHex(8);
  const secret = randomHex(24);
  return { id, token: `${prefix}_${id}_${secret}`, secretHash: hashSecret(secret) };
}

/** Hex SHA-256 of a token secret. */
export function hashSecret(secret: string): string {
  return bytesToHex(sha256(utf8(secret)));
}

/** Splits a token into id and secret, or null when it is not one of ours. */
export function parseToken(token: string, prefix: TokenKind): { id: string; secret: string } | null {
  const m = TOKEN_SHAPE.exec(token);
  if (!m || m[1] !== prefix) return null;
  return { id: m[2]!, secret: m[3]! };
}

/** Compares a presented secret with a stored hash in constant time. */
export function secretMatches(secret: string, storedHash: string): boolean {
  if (!isHex(storedHash, 32)) return false;
  return equalBytes(sha256(utf8(secret)), fromHex(storedHash, 32));
}

/** A fresh random id with a prefix (workspaces, hosts). */
export function newId(prefix: string): string {
  return `${prefix}${randomHex(8)}`;
}

/** A day, in milliseconds. */
export const DAY_MS = 24 * 60 * 60_000;
/** How long an operator token lives unless its maker chose otherwise (`ttl_days`). */
export const OPERATOR_TOKEN_DAYS = 90;

/** How long an enrollment token may live, in minutes (at most a week). */
export const EnrollmentTtlMinutes = z
  .number()
  .int()
  .min(1)
  .max(7 * 24 * 60);

/**
 * Mints a one-time enrollment token for the workspace; the token itself is answered once and never
 * stored. With `agent`, the host it enrolls wraps that registered custom agent.
 */
export async function mintEnrollmentToken(
  env: Env,
  workspaceId: string,
  createdBy: string,
  ttlMinutes: number,
  agent: string | null = null,
) {
  const t = newToken("oxe");
  const now = Date.now();
  const expiresMs = now + ttlMinutes * 60_000;
  await db(env)
    .insert(schema.enrollmentTokens)
    .values({ id: t.id, workspaceId, secretHash: t.secretHash, createdMs: now, expiresMs, createdBy, agent });
  return { id: t.id, token: t.token, expires_ms: expiresMs };
}
