import { and, eq, gt, lt, sql } from "drizzle-orm";
import {
  type DeviceCode,
  type DeviceGrant,
  type DeviceStart,
  fromHex,
  keyIdFor,
  normalizeUserCode,
  publicKeyProblem,
  USER_CODE_ALPHABET,
} from "../../protocol/index.ts";
import { serverOrigin } from "../auth/host.ts";
import { db, schema } from "../db/client.ts";
import { insertWhere } from "../db/insert-where.ts";
import { AppError } from "../errors.ts";
import { QuotaError } from "./quotas.ts";
import { DAY_MS, hashSecret, newToken, OPERATOR_TOKEN_DAYS, parseToken } from "./tokens.ts";

/** A device code lives this long: long enough to find an operator, short enough that a stale one is gone. */
export const DEVICE_CODE_S = 10 * 60;
/** The first poll interval, in seconds (RFC 8628's default); each `slow_down` adds 5. */
export const DEVICE_INTERVAL_S = 5;
/** How long the enrollment token an approved code yields lives: the computer spends it at once. */
const GRANT_ENROLL_MS = 10 * 60_000;
/** The console page an operator approves a code on. */
export const DEVICE_PAGE = "/console/device";

const dc = schema.deviceCodes;
/** A device code's row. */
export type DeviceRow = typeof dc.$inferSelect;

/** Hex SHA-256 of a normalized user code: the one form it is stored and looked up in. */
export function userCodeHash(code: string): string {
  return hashSecret(code);
}

function newUserCode(): string {
  // 20 letters: a byte below 240 maps evenly (240 = 12 × 20); the others are drawn again.
  const out: string[] = [];
  while (out.length < 8) {
    for (const b of crypto.getRandomValues(new Uint8Array(16))) {
      if (b < 240 && out.length < 8) out.push(USER_CODE_ALPHABET[b % 20]!);
    }
  }
  return `${out.slice(0, 4).join("")}-${out.slice(4).join("")}`;
}

/** The address a request came from, as Cloudflare gives it. */
export function clientAddress(headers: Headers): string {
  return headers.get("cf-connecting-ip") ?? "unknown";
}

/**
 * Starts a device authorization: refused (429) past the per-address limit, and for a host key the
 * server would refuse at enrollment, before anything is stored. Rows expired over a day ago go in
 * the same transaction, so the table holds only the last day's codes.
 */
export async function startDevice(env: Env, req: DeviceStart, address: string, now: number): Promise<DeviceCode> {
  if (!(await env.DEVICE_START_LIMIT.limit({ key: `start:${address}` })).success)
    throw new QuotaError({
      message: "Too many sign-in codes asked for from this address; try again in a minute.",
      retryAfterS: 60,
      issues: [],
    });
  if (req.public_key !== undefined) {
    const problem = publicKeyProblem(fromHex(req.public_key, 32));
    if (problem) throw new AppError(400, "bad_public_key", `The host key is refused: ${problem}.`);
  }
  const d = db(env);
  const t = newToken("oxd");
  for (let attempt = 0; ; attempt++) {
    const userCode = newUserCode();
    try {
      await d.batch([
        d.delete(dc).where(lt(dc.expiresMs, now - DAY_MS)),
        d.insert(dc).values({
          id: t.id,
          secretHash: t.secretHash,
          userCodeHash: userCodeHash(userCode),
          purpose: req.purpose,
          publicKey: req.public_key ?? null,
          hostname: req.hostname,
          username: req.user,
          os: req.os,
          harnesses: JSON.stringify(req.harnesses),
          askedWorkspace: req.workspace ?? null,
          address,
          createdMs: now,
          expiresMs: now + DEVICE_CODE_S * 1000,
          intervalS: DEVICE_INTERVAL_S,
        }),
      ]);
      const page = `${serverOrigin(env)}${DEVICE_PAGE}`;
      return {
        device_code: t.token,
        user_code: userCode,
        verification_uri: page,
        verification_uri_complete: `${page}?code=${userCode}`,
        expires_in: DEVICE_CODE_S,
        interval: DEVICE_INTERVAL_S,
      };
    } catch (err) {
      // Two live codes may not share a user code: draw another (20^8 codes make this rare).
      const said = `${(err as Error).message ?? err} ${((err as Error).cause as Error | undefined)?.message ?? ""}`;
      if (attempt >= 3 || !/UNIQUE/i.test(said)) throw err;
    }
  }
}

/** A poll's refusal in RFC 8628's terms: HTTP 400, the error code, a sentence. */
function pollError(code: string, message: string, fields: Record<string, unknown> = {}): AppError {
  return new AppError(400, code, message, { fields });
}

/**
 * One poll of a device code: a single D1 statement records it (and, for a poll sooner than the
 * interval, raises the interval by 5 s and says `slow_down`), then answers the code's state. The
 * one poll that finds it approved takes the approval, in one transaction with the token it mints.
 */
export async function pollDevice(env: Env, deviceCode: string, address: string, now: number): Promise<DeviceGrant> {
  if (!(await env.DEVICE_POLL_LIMIT.limit({ key: address })).success)
    throw pollError("slow_down", "Too many polls from this address; wait longer between them.");
  const parsed = parseToken(deviceCode, "oxd");
  if (!parsed) throw pollError("invalid_grant", "The device code is not one this server issued.");
  const secretHash = hashSecret(parsed.secret);
  // Every SET expression reads the row as it was before this poll.
  const tooSoon = sql`(${dc.lastPollMs} IS NOT NULL AND ${now} - ${dc.lastPollMs} < (${dc.intervalS} - 1) * 1000)`;
  const [row] = await db(env)
    .update(dc)
    .set({
      lastPollMs: now,
      intervalS: sql`${dc.intervalS} + CASE WHEN ${dc.status} = 'pending' AND ${tooSoon} THEN 5 ELSE 0 END`,
      lastPollFast: sql`CASE WHEN ${tooSoon} THEN 1 ELSE 0 END`,
    })
    .where(and(eq(dc.id, parsed.id), eq(dc.secretHash, secretHash)))
    .returning();
  if (!row) throw pollError("invalid_grant", "The device code is not one this server issued.");
  if (row.status === "issued") throw pollError("invalid_grant", "The device code was used already; ask for a new one.");
  if (row.status === "denied") throw pollError("access_denied", "The request was denied in the Oxagen console. Nothing was issued.");
  if (row.expiresMs <= now) throw pollError("expired_token", "The code expired before it was approved; ask for a new one.");
  if (row.status === "pending") {
    if (row.lastPollFast === 1)
      throw pollError("slow_down", `Polled sooner than every ${row.intervalS - 5} s; poll every ${row.intervalS} s from now on.`, {
        interval: row.intervalS,
      });
    throw pollError("authorization_pending", "Waiting for an operator to approve the code in the Oxagen console.", {
      interval: row.intervalS,
    });
  }
  return issue(env, row, now);
}

/** Takes an approved code's approval and mints what it grants, in one transaction: of two polls only one gets it. */
async function issue(env: Env, row: DeviceRow, now: number): Promise<DeviceGrant> {
  const purpose = row.purpose;
  const workspaceId = row.workspaceId!;
  const t = newToken(purpose === "enroll" ? "oxe" : "oxo");
  const take = db(env)
    .update(dc)
    .set({ status: "issued", issuedMs: now, issuedToken: t.id })
    .where(and(eq(dc.id, row.id), eq(dc.status, "approved"), gt(dc.expiresMs, now)))
    .toSQL();
  const tookIt = sql`EXISTS (SELECT 1 FROM ${dc} WHERE ${and(eq(dc.id, row.id), eq(dc.issuedToken, t.id))})`;
  const expiresMs = purpose === "enroll" ? now + GRANT_ENROLL_MS : now + OPERATOR_TOKEN_DAYS * DAY_MS;
  const mint =
    purpose === "enroll"
      ? insertWhere(
          env,
          schema.enrollmentTokens,
          {
            id: t.id,
            workspaceId,
            secretHash: t.secretHash,
            createdMs: now,
            expiresMs,
            createdBy: row.decidedBy,
            publicKey: row.publicKey,
          },
          tookIt,
        )
      : insertWhere(
          env,
          schema.operatorTokens,
          {
            id: t.id,
            workspaceId,
            name: `oxagen login: ${row.username}@${row.hostname}`.slice(0, 128),
            scope: row.scope ?? "read",
            secretHash: t.secretHash,
            createdMs: now,
            expiresMs,
            createdBy: row.decidedBy,
          },
          tookIt,
        );
  const [took] = await env.DB.batch([env.DB.prepare(take.sql).bind(...take.params), mint]);
  if (took?.meta.changes !== 1) throw pollError("invalid_grant", "The device code was used already; ask for a new one.");
  if (purpose === "enroll") return { purpose, enrollment_token: t.token, workspace: workspaceId, expires_ms: expiresMs };
  return { purpose, operator_token: t.token, token_id: t.id, scope: row.scope ?? "read", workspace: workspaceId, expires_ms: expiresMs };
}

/** The code a person typed, or null when it names no code (rate-limited per operator token: codes cannot be guessed). */
export async function findDevice(env: Env, typed: string, tokenId: string): Promise<DeviceRow | null> {
  if (!(await env.DEVICE_POLL_LIMIT.limit({ key: `check:${tokenId}` })).success)
    throw new AppError(429, "quota_exceeded", "Too many codes looked up with this token; wait a minute and try again.");
  const code = normalizeUserCode(typed);
  if (!code) return null;
  return (
    (await db(env)
      .select()
      .from(dc)
      .where(eq(dc.userCodeHash, userCodeHash(code)))
      .get()) ?? null
  );
}

/** A device code's state as the console shows it. */
export function deviceState(row: DeviceRow, now: number): "pending" | "approved" | "denied" | "issued" | "expired" {
  if (row.status === "issued" || row.status === "denied") return row.status;
  return row.expiresMs <= now ? "expired" : row.status;
}

/** The key id of the host key an enroll code was asked with (the computer prints the same one). */
export function deviceKeyId(row: DeviceRow): string | null {
  return row.publicKey === null ? null : keyIdFor(fromHex(row.publicKey, 32));
}

/**
 * Approves or denies a pending, unexpired code in the operator's workspace; false when it is no
 * longer pending (another operator decided, it expired). A code asked for one workspace is
 * approved only into that one.
 */
export async function decideDevice(
  env: Env,
  row: DeviceRow,
  decision: { approve: boolean; workspaceId: string; tokenId: string; scope: "admin" | "read" | null },
  now: number,
): Promise<boolean> {
  if (decision.approve && row.askedWorkspace !== null && row.askedWorkspace !== decision.workspaceId)
    throw new AppError(
      409,
      "wrong_workspace",
      `The computer asked to enroll in workspace ${row.askedWorkspace}; you are signed in to ${decision.workspaceId}.`,
    );
  const res = await db(env)
    .update(dc)
    .set({
      status: decision.approve ? "approved" : "denied",
      workspaceId: decision.workspaceId,
      decidedBy: decision.tokenId,
      decidedMs: now,
      scope: row.purpose === "login" && decision.approve ? (decision.scope ?? "read") : null,
    })
    .where(and(eq(dc.id, row.id), eq(dc.status, "pending"), gt(dc.expiresMs, now)))
    .run();
  return res.meta.changes === 1;
}
