import { and, isNull, ne } from "drizzle-orm";
import { bytesToHex, endorseKey, fromHex, keyIdFor, publicKeyOf } from "../protocol/index.ts";
import { db, schema } from "./db/client.ts";
import { AppError } from "./errors.ts";

/** The server's signing key, from the OXAGEN_SIGNING_KEY secret (32-byte Ed25519 seed, 64 hex). */
export interface ServerKey {
  secret: Uint8Array;
  pub: Uint8Array;
  keyId: string;
}

/** A row of `server_keys`. */
export type ServerKeyRow = typeof schema.serverKeys.$inferSelect;

const parsed = new Map<string, ServerKey>();

function keyFrom(hex: string, name: string): ServerKey {
  let key = parsed.get(hex);
  if (key) return key;
  let secret: Uint8Array;
  try {
    secret = fromHex(hex, 32);
  } catch (cause) {
    throw new AppError(500, "server_misconfigured", `The server's ${name} is not a 64-hex Ed25519 seed.`, { cause });
  }
  const pub = publicKeyOf(secret);
  key = { secret, pub, keyId: keyIdFor(pub) };
  if (parsed.size > 8) parsed.clear();
  parsed.set(hex, key);
  return key;
}

/** The key the server signs with; a missing or malformed secret is a deployment fault (500), never the caller's. */
export function serverKey(env: Pick<Env, "OXAGEN_SIGNING_KEY">): ServerKey {
  if (!env.OXAGEN_SIGNING_KEY) throw new AppError(500, "server_misconfigured", "The server's signing key is not configured.");
  return keyFrom(env.OXAGEN_SIGNING_KEY, "signing key");
}

// The key id this isolate last found on record as the one signing, and when: checked again after a
// minute, so an isolate of an older deploy stops signing soon after a newer one took over.
let recorded: { keyId: string; at: number } | null = null;
const RECHECK_MS = 60_000;

/**
 * Every key on record, newest first, after making sure the current one is: the first time the
 * server signs with a new key it is written with `not_before_ms` = now, and the key that signed
 * until then gets `not_after_ms` = now (the first key ever recorded gets `not_before_ms` = 0: it
 * has signed since before the record was kept). When the retired key's secret is still configured
 * (OXAGEN_PREVIOUS_SIGNING_KEY, an optional secret), it endorses the new key, so collectors that
 * pinned it learn the new one. A current key already retired (a rollback) is a 500: rotate forward.
 */
export async function serverKeys(env: Env, now = Date.now()): Promise<ServerKeyRow[]> {
  const key = serverKey(env);
  const d = db(env);
  const t = schema.serverKeys;
  let rows = await d.select().from(t).all();
  if (!rows.some((r) => r.keyId === key.keyId)) {
    // Optional: not in wrangler.toml's required secrets, so not in the generated Env.
    const previousHex = (env as unknown as { OXAGEN_PREVIOUS_SIGNING_KEY?: string }).OXAGEN_PREVIOUS_SIGNING_KEY;
    const previous = previousHex ? keyFrom(previousHex, "previous signing key") : null;
    // Before the first record the key (or, in a rotation, the previous one) has signed since the start.
    const first = rows.length === 0;
    const next = { key_id: key.keyId, pub: bytesToHex(key.pub), not_before_ms: first && !previous ? 0 : now };
    const vouch = previous ? endorseKey(previous.secret, previous.keyId, next) : null;
    const retire = d
      .update(t)
      .set({ notAfterMs: now })
      .where(and(isNull(t.notAfterMs), ne(t.keyId, key.keyId)));
    const record = d
      .insert(t)
      .values({
        keyId: key.keyId,
        publicKey: next.pub,
        notBeforeMs: next.not_before_ms,
        endorsedBy: vouch?.by ?? null,
        endorsement: vouch?.sig ?? null,
      })
      .onConflictDoNothing();
    if (first && previous) {
      const earlier = d
        .insert(t)
        .values({ keyId: previous.keyId, publicKey: bytesToHex(previous.pub), notBeforeMs: 0, notAfterMs: now })
        .onConflictDoNothing();
      await d.batch([earlier, retire, record]);
    } else await d.batch([retire, record]);
    rows = await d.select().from(t).all();
  }
  const mine = rows.find((r) => r.keyId === key.keyId);
  if (mine?.notAfterMs !== null && mine?.notAfterMs !== undefined)
    throw new AppError(
      500,
      "server_misconfigured",
      "The server's signing key was retired by a newer one; configure a new key, never an old one.",
    );
  recorded = { keyId: key.keyId, at: now };
  return rows.sort((a, b) => b.notBeforeMs - a.notBeforeMs);
}

/** The key to sign with now, on record in `server_keys` (see {@link serverKeys}). */
export async function signingKey(env: Env): Promise<ServerKey> {
  const key = serverKey(env);
  const now = Date.now();
  if (recorded?.keyId !== key.keyId || now - recorded.at > RECHECK_MS) await serverKeys(env, now);
  return key;
}
