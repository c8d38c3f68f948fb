/**
 * The server's keys over time, and the keys a verifier pins.
 *
 * `GET /v1/keys` lists every key the server has signed with, each with the period it signed in:
 * a new key signs from its `not_before_ms` on; the key before it signs nothing from that instant
 * (`not_after_ms`; null while it still signs).
 *
 * `GET /v1/keys/endorsements` lists, for each key that took over from another while that one's
 * secret was at hand, an endorsement: Ed25519 by the earlier key over
 * `PAE("application/vnd.oxagen.key-endorsement.v1", KEY_ID "\n" PUB_HEX "\n" NOT_BEFORE_MS)`.
 * A collector that pinned one key follows endorsements from it to learn its successors, so it can
 * trust a policy a later key signed without being enrolled again.
 *
 * A verifier pins keys (bare, or the whole `GET /v1/keys` answer). A signature names its key by
 * id; the pinned key with that id checks it only if the key may be used for that purpose at the
 * time the signed thing states, both ends included.
 * @module
 */
import { z } from "zod";
import { bytesToHex, fromHex, isHex, utf8 } from "./bytes.ts";
import { sign, verifyStrict } from "./ed25519.ts";
import { keyIdFor, Sha256Hex } from "./ids.ts";
import { pae } from "./lock.ts";

const KeyId = z.string().regex(/^[0-9a-f]{16}$/, "not 16 lowercase hex characters");
const ms = z.number().int().nonnegative();

/** One server key as `GET /v1/keys` lists it. */
export const ServerKeyEntry = z.strictObject({
  key_id: KeyId,
  alg: z.literal("ed25519"),
  pub: Sha256Hex,
  use: z.array(z.enum(["bundle", "policy", "seal"])),
  not_before_ms: ms,
  not_after_ms: ms.nullable(),
});
/** One of {@link ServerKeyEntry}. */
export type ServerKeyEntry = z.infer<typeof ServerKeyEntry>;

/** The answer to `GET /v1/keys`: newest key first. */
export const ServerKeySet = z.strictObject({ keys: z.array(ServerKeyEntry) });

/** One endorsement: the key `by` vouches for key `key_id` (public key `pub`) from `not_before_ms`. */
export const KeyEndorsement = z.strictObject({ key_id: KeyId, pub: Sha256Hex, not_before_ms: ms, by: KeyId, sig: z.string() });
/** One of {@link KeyEndorsement}. */
export type KeyEndorsement = z.infer<typeof KeyEndorsement>;

/** The answer to `GET /v1/keys/endorsements`. */
export const KeyEndorsements = z.strictObject({ endorsements: z.array(KeyEndorsement) });

/** The DSSE payload type of an endorsement. */
export const KEY_ENDORSEMENT_PAYLOAD_TYPE = "application/vnd.oxagen.key-endorsement.v1";

/** The bytes an endorsement signs. */
export function endorsementInput(e: Pick<KeyEndorsement, "key_id" | "pub" | "not_before_ms">): Uint8Array {
  return pae(KEY_ENDORSEMENT_PAYLOAD_TYPE, utf8(`${e.key_id}\n${e.pub}\n${e.not_before_ms}`));
}

/** Endorses a new key with the secret of the key before it. */
export function endorseKey(
  previousSecret: Uint8Array,
  previousKeyId: string,
  next: Pick<KeyEndorsement, "key_id" | "pub" | "not_before_ms">,
): KeyEndorsement {
  return { ...next, by: previousKeyId, sig: bytesToHex(sign(previousSecret, endorsementInput(next))) };
}

/** The most endorsements followed from a pinned key (one per rotation). */
export const MAX_ENDORSEMENT_HOPS = 32;

/**
 * Follows endorsements from the pinned key to the key with id `target`: each step must be signed
 * by the key before it and name a public key whose id is the one it states. Returns the target
 * key, or null when no chain of valid endorsements leads there.
 */
export function endorsedKey(
  pinned: { key_id: string; pub: string },
  target: string,
  endorsements: readonly KeyEndorsement[],
): { key_id: string; pub: string } | null {
  let at = pinned;
  for (let hop = 0; hop <= MAX_ENDORSEMENT_HOPS; hop++) {
    if (at.key_id === target) return at;
    const next = endorsements.find((e) => e.by === at.key_id);
    if (!next || !isHex(next.sig, 64) || !isHex(next.pub, 32)) return null;
    if (keyIdFor(fromHex(next.pub, 32)) !== next.key_id) return null;
    if (!verifyStrict(fromHex(at.pub, 32), endorsementInput(next), fromHex(next.sig, 64))) return null;
    at = { key_id: next.key_id, pub: next.pub };
  }
  return null;
}

/**
 * The `GET /v1/keys` answer as a verifier reads it: members it does not name are ignored, and a
 * use it does not know is kept (a newer server may list more).
 */
export const ServerKeyList = z.object({
  keys: z.array(
    z.object({
      key_id: KeyId,
      alg: z.literal("ed25519"),
      pub: z.string().regex(/^[0-9a-f]{64}$/, "not 64 lowercase hex characters"),
      use: z.array(z.string()),
      not_before_ms: ms,
      not_after_ms: ms.nullable(),
    }),
  ),
});

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
