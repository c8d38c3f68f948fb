/**
 * Pinned server keys: the keys a verifier trusts to sign bundles and seal locks, each with the
 * uses and the period it may sign in. A signature names its key by id; the pinned key with that
 * id signs it only if the key may be used for that purpose at the time the signed thing states.
 * @module
 */
import { z } from "zod";
import { fromHex, isHex } from "./bytes.ts";
import { keyIdFor } from "./ids.ts";

/** One key as `GET /v1/keys` lists it (members it does not name are ignored). */
export const ServerKeyEntry = z.object({
  key_id: z.string().regex(/^[0-9a-f]{16}$/, "not 16 lowercase hex characters"),
  alg: z.literal("ed25519"),
  pub: z.string().regex(/^[0-9a-f]{64}$/, "not 64 lowercase hex characters"),
  use: z.array(z.string()),
  not_before_ms: z.number().int().nonnegative(),
  not_after_ms: z.number().int().nonnegative().nullable(),
});

/** The answer of `GET /v1/keys`. */
export const ServerKeyList = z.object({ keys: z.array(ServerKeyEntry) });

/** What a signature by a server key is for. */
export type KeyUse = "bundle" | "seal";

/** A server key a verifier trusts. */
export interface PinnedKey {
  pub: Uint8Array;
  keyId: string;
  /** What it may sign; null when pinned without uses (any). */
  use: readonly string[] | null;
  /** The first and last millisecond it may sign at (both included); null when open. */
  notBeforeMs: number | null;
  notAfterMs: number | null;
}

/** A key pinned by its bare public key: any use, any time. */
export function pinKey(pub: Uint8Array): PinnedKey {
  return { pub, keyId: keyIdFor(pub), use: null, notBeforeMs: null, notAfterMs: null };
}

/**
 * The keys of a `GET /v1/keys` answer. Throws with the reason when it is not one, or when an
 * entry's key id is not its key's.
 */
export function pinKeyList(value: unknown): PinnedKey[] {
  const parsed = ServerKeyList.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`not a list of server keys (${issue ? `${issue.path.join(".")}: ${issue.message}` : "invalid"})`);
  }
  return parsed.data.keys.map((k) => {
    const pub = fromHex(k.pub, 32);
    if (keyIdFor(pub) !== k.key_id) throw new Error(`key_id ${k.key_id} is not the id of its key (${keyIdFor(pub)})`);
    return { pub, keyId: k.key_id, use: k.use, notBeforeMs: k.not_before_ms, notAfterMs: k.not_after_ms };
  });
}

/** Why no pinned key may check a signature: no key has its id, or none may sign this at that time. */
export interface KeyRefusal {
  code: "SERVER_KEY_UNKNOWN" | "SERVER_KEY_NOT_VALID";
  message: string;
}

const when = (ms: number | null) => (ms === null ? "open" : ms <= 8.64e15 ? new Date(ms).toISOString() : `${ms} ms`);

/**
 * The pinned key that checks a signature by key `keyId` for `use`, made at `atMs` (a bundle's
 * `exported_ms`, a seal lock's `t`), and why it may not, if so. A key that has the id but may not
 * sign this is still given, so the signature can be checked as well.
 */
export function pickKey(
  keys: readonly PinnedKey[],
  keyId: string,
  use: KeyUse,
  atMs: number,
): { key: Uint8Array; refusal: KeyRefusal | null } | { key: null; refusal: KeyRefusal } {
  const named = keys.filter((k) => k.keyId === keyId);
  if (named.length === 0) {
    const ids = [...new Set(keys.map((k) => k.keyId))].join(", ");
    return {
      key: null,
      refusal: { code: "SERVER_KEY_UNKNOWN", message: `Key ${isHex(keyId) ? keyId : "?"} is not one of the pinned server keys (${ids}).` },
    };
  }
  const usable = named.filter((k) => k.use === null || k.use.includes(use));
  if (usable.length === 0) {
    return { key: named[0]!.pub, refusal: { code: "SERVER_KEY_NOT_VALID", message: `Pinned key ${keyId} may not sign a ${use}.` } };
  }
  const valid = usable.find((k) => (k.notBeforeMs === null || atMs >= k.notBeforeMs) && (k.notAfterMs === null || atMs <= k.notAfterMs));
  if (valid) return { key: valid.pub, refusal: null };
  const k = usable[0]!;
  const message = `Pinned key ${keyId} may sign from ${when(k.notBeforeMs)} to ${when(k.notAfterMs)}, not at ${when(atMs)}, when this ${use} was signed.`;
  return { key: k.pub, refusal: { code: "SERVER_KEY_NOT_VALID", message } };
}
