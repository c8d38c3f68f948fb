/**
 * Ed25519, verified strictly and the same way everywhere.
 *
 * The decision is @noble/ed25519's strict branch (`zip215: false`): canonical encodings of A and
 * R, S < L, no small-order public key, and the cofactored equation. Every side of Oxagen (the
 * Worker, the collector, `oxagen verify`) makes exactly that decision.
 *
 * A Node process may install a faster verifier with {@link useFastVerify} (e.g. `node:crypto`).
 * It is consulted only for keys that pass {@link publicKeyProblem}, and only its *acceptance* is
 * used: for such keys a cofactorless verifier that accepts (as OpenSSL's does: S < L, and R must
 * equal the canonical encoding of SB - kA) implies the strict branch accepts too. A rejection
 * always falls through to noble, so the decision never changes.
 * @module
 */
import * as ed from "@noble/ed25519";
import { sha512 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "./bytes.ts";

ed.hashes.sha512 = sha512;

/** A verifier that may accept faster; its rejection is never trusted on its own. */
export type FastVerify = (publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array) => boolean;

let fast: FastVerify | null = null;

/** Installs (or, with null, removes) a faster verifier; see the module notes for why this is safe. */
export function useFastVerify(fn: FastVerify | null): void {
  fast = fn;
}

/** Why a public key is refused (wrong length, non-canonical encoding, not on the curve, small order), or null. */
export function publicKeyProblem(publicKey: Uint8Array): string | null {
  if (publicKey.length !== 32) return "public key is not 32 bytes";
  let point: ed.Point;
  try {
    point = ed.Point.fromBytes(publicKey, false);
  } catch {
    return "public key is not a canonical curve point";
  }
  if (point.isSmallOrder()) return "public key has small order";
  return null;
}

const checkedKeys = new Map<string, boolean>();

function acceptableKey(publicKey: Uint8Array): boolean {
  const id = bytesToHex(publicKey);
  let ok = checkedKeys.get(id);
  if (ok === undefined) {
    ok = publicKeyProblem(publicKey) === null;
    if (checkedKeys.size > 1024) checkedKeys.clear();
    checkedKeys.set(id, ok);
  }
  return ok;
}

/** Strict Ed25519 verification; never throws. */
export function verifyStrict(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (signature.length !== 64 || !acceptableKey(publicKey)) return false;
  try {
    if (fast?.(publicKey, message, signature)) return true;
  } catch {
    // A fast verifier that throws decides nothing; noble below does.
  }
  try {
    return ed.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}

/** A signer that gives the same bytes as noble (Ed25519 signatures are deterministic, RFC 8032). */
export type FastSign = (secretKey: Uint8Array, message: Uint8Array) => Uint8Array;

let fastSign: FastSign | null = null;

/**
 * Installs (or, with null, removes) a faster signer, e.g. `node:crypto`'s. Ed25519 signing is
 * deterministic, so the signature is the same bytes either way; a signer that throws falls back to
 * noble.
 */
export function useFastSign(fn: FastSign | null): void {
  fastSign = fn;
}

/** Signs `message` with a 32-byte Ed25519 secret key (seed). */
export function sign(secretKey: Uint8Array, message: Uint8Array): Uint8Array {
  if (fastSign) {
    try {
      const sig = fastSign(secretKey, message);
      if (sig.length === 64) return sig;
    } catch {
      // Noble below signs.
    }
  }
  return ed.sign(message, secretKey);
}

// A signer uses one key for all it signs (each chain lock names the key's id): its public half,
// about 0.25 ms with noble, is derived once. Compared by value, so a key changed in place is not
// mistaken for the one before.
let lastKey: { secret: Uint8Array; publicKey: Uint8Array } | null = null;

/** The public key of a 32-byte secret key (seed). */
export function publicKeyOf(secretKey: Uint8Array): Uint8Array {
  const last = lastKey;
  if (last && last.secret.length === secretKey.length && last.secret.every((b, i) => b === secretKey[i])) return last.publicKey.slice();
  const publicKey = ed.getPublicKey(secretKey);
  lastKey = { secret: secretKey.slice(), publicKey: publicKey.slice() };
  return publicKey;
}

/** A new random secret key (seed), from the platform's CSPRNG. */
export function newSecretKey(): Uint8Array {
  return ed.utils.randomSecretKey();
}
