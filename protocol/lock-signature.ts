/**
 * A lock's signature (see `lock.ts`). Apart from `lock.ts` so that a thread that only checks
 * signatures loads no schemas.
 * @module
 */
import { concatBytes, fromHex, utf8 } from "./bytes.ts";
import { verifyStrict } from "./ed25519.ts";

/** The DSSE payload type of a lock. */
export const LOCK_PAYLOAD_TYPE = "application/vnd.oxagen.lock.v1+json";

/** DSSE pre-authentication encoding. */
export function pae(type: string, body: Uint8Array): Uint8Array {
  const t = utf8(type);
  return concatBytes(utf8(`DSSEv1 ${t.length} `), t, utf8(` ${body.length} `), body);
}

/** True when the lock's signature verifies under `publicKey` (strict Ed25519). */
export function lockSignatureValid(lock: { payload: string; sig: string }, publicKey: Uint8Array): boolean {
  let sig: Uint8Array;
  try {
    sig = fromHex(lock.sig, 64);
  } catch {
    return false;
  }
  return verifyStrict(publicKey, pae(LOCK_PAYLOAD_TYPE, utf8(lock.payload)), sig);
}
