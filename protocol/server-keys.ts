/**
 * The server's keys over time. `GET /v1/keys` lists every key the server has signed with, each
 * with the period it signed in: a signature by a key is valid only for a time in
 * `[not_before_ms, not_after_ms)` (`not_after_ms` null: still signing). A new key signs from its
 * `not_before_ms` on; the key before it signs nothing from that instant.
 *
 * `GET /v1/keys/endorsements` lists, for each key that took over from another while that one's
 * secret was at hand, an endorsement: Ed25519 by the earlier key over
 * `PAE("application/vnd.oxagen.key-endorsement.v1", KEY_ID "\n" PUB_HEX "\n" NOT_BEFORE_MS)`.
 * A collector that pinned one key follows endorsements from it to learn its successors, so it can
 * trust a policy a later key signed without being enrolled again.
 * @module
 */
import { z } from "zod";
import { bytesToHex, fromHex, isHex, utf8 } from "./bytes.ts";
import { sign, verifyStrict } from "./ed25519.ts";
import { keyIdFor, Sha256Hex } from "./ids.ts";
import { pae } from "./lock.ts";

const KeyId = z.string().regex(/^[0-9a-f]{16}$/);
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
