/**
 * Locks: signed chain heads.
 *
 * A lock's payload is Record JSON (see `json.ts`) with exactly the fields of {@link LockPayload}.
 * Its signature is Ed25519 over the DSSE pre-authentication encoding
 * `PAE(type, payload) = "DSSEv1" SP len(type) SP type SP len(payload) SP payload` with
 * type {@link LOCK_PAYLOAD_TYPE} and lengths in ASCII decimal. A lock's own hash, which the next
 * lock names in `prev_lock`, is SHA-256 of those PAE bytes (no domain tag: PAE is one already).
 * @module
 */
import { z } from "zod";
import { bytesToHex, utf8 } from "./bytes.ts";
import { sha256 } from "./hash.ts";
import { publicKeyOf, sign } from "./ed25519.ts";
import { ChainId, HostId, Sha256Hex } from "./ids.ts";
import { readRecordJson, toRecordJson } from "./json.ts";
import { keyIdFor } from "./ids.ts";
import { LOCK_PAYLOAD_TYPE, pae } from "./lock-signature.ts";

export { LOCK_PAYLOAD_TYPE, lockSignatureValid, pae } from "./lock-signature.ts";

/** The fields of a lock, all required. */
export const LockPayload = z.strictObject({
  v: z.literal(1),
  chain: ChainId,
  lock_seq: z.number().int().nonnegative(),
  count: z.number().int().nonnegative(),
  head: Sha256Hex,
  prev_lock: Sha256Hex.nullable(),
  t: z.number().int().nonnegative(),
  final: z.boolean(),
  signer: z.enum(["host", "server"]),
  host: HostId,
  key_id: z.string().regex(/^[0-9a-f]{16}$/),
});
/** A parsed lock payload. */
export type LockPayload = z.infer<typeof LockPayload>;

/** A lock as it travels: the payload's exact Record JSON text and the hex signature. */
export const SignedLock = z.strictObject({
  payload: z.string().min(2).max(2048),
  sig: z.string().regex(/^[0-9a-f]{128}$/),
});
/** One of {@link SignedLock}. */
export type SignedLock = z.infer<typeof SignedLock>;

/** The hash of a lock, which the next lock names as `prev_lock`. */
export function lockHash(lock: SignedLock): string {
  return bytesToHex(sha256(pae(LOCK_PAYLOAD_TYPE, utf8(lock.payload))));
}

/** Writes and signs a lock. `key_id` is filled in from the secret key. */
export function signLock(fields: Omit<LockPayload, "v" | "key_id">, secretKey: Uint8Array): SignedLock {
  const ordered = LockPayload.parse({ v: 1, ...fields, key_id: keyIdFor(publicKeyOf(secretKey)) });
  const payload = toRecordJson(ordered);
  const sig = sign(secretKey, pae(LOCK_PAYLOAD_TYPE, utf8(payload)));
  return { payload, sig: bytesToHex(sig) };
}

const LOCK_MEMBERS = Object.keys(LockPayload.shape).join(",");

/** Reads a lock's payload, checking its form and member order: the payload, or why it is not a lock. */
export function readLock(lock: SignedLock): { payload: LockPayload; problem: null } | { payload: null; problem: string } {
  const read = readRecordJson(lock.payload);
  if (read.problem !== null) return { payload: null, problem: read.problem };
  const parsed = LockPayload.safeParse(read.value);
  if (!parsed.success) return { payload: null, problem: parsed.error.message };
  if (Object.keys(read.value as object).join(",") !== LOCK_MEMBERS)
    return { payload: null, problem: `lock members are not in the order ${LOCK_MEMBERS}` };
  return { payload: parsed.data, problem: null };
}

/** Parses a lock's payload (see {@link readLock}); throws with the reason when it is not a lock. */
export function parseLock(lock: SignedLock): LockPayload {
  const read = readLock(lock);
  if (read.problem !== null) throw new Error(read.problem);
  return read.payload;
}
