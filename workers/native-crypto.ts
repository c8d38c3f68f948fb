import { createHash, createPrivateKey, createPublicKey, sign, verify } from "node:crypto";
import { bytesToHex, publicKeyOf, useFastSign, useFastVerify, useSha256, useSha256Stream } from "../protocol/index.ts";

type PublicKey = ReturnType<typeof createPublicKey>;

const keys = new Map<string, PublicKey>();

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

const secrets = new Map<string, ReturnType<typeof createPrivateKey>>();

function privateKeyObject(secretKey: Uint8Array) {
  const id = bytesToHex(secretKey);
  let key = secrets.get(id);
  if (!key) {
    const jwk = { kty: "OKP" as const, crv: "Ed25519" as const, x: base64url(publicKeyOf(secretKey)), d: base64url(secretKey) };
    key = createPrivateKey({ key: jwk, format: "jwk" });
    if (secrets.size > 16) secrets.clear();
    secrets.set(id, key);
  }
  return key;
}

function keyObject(publicKey: Uint8Array): PublicKey {
  const id = bytesToHex(publicKey);
  let key = keys.get(id);
  if (!key) {
    key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: base64url(publicKey) }, format: "jwk" });
    if (keys.size > 1024) keys.clear();
    keys.set(id, key);
  }
  return key;
}

/**
 * Uses the runtime's native SHA-256 and Ed25519 (BoringSSL through nodejs_compat): in workerd,
 * @noble is about 20× slower for SHA-256 and 40× for verification. Decisions do not change: the
 * hash is the same function, and protocol/ed25519.ts only ever trusts a native *acceptance* (a
 * rejection falls through to the strict noble check).
 */
export function useNativeCrypto(): void {
  useSha256((data) => {
    const d = createHash("sha256").update(data).digest();
    return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  });
  useSha256Stream(() => {
    const h = createHash("sha256");
    return {
      update: (data) => {
        h.update(data);
      },
      digest: () => {
        const d = h.digest();
        return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
      },
    };
  });
  useFastVerify((publicKey, message, signature) => verify(null, message, keyObject(publicKey), signature));
  // The server signs every host's policy on every fetch (each push brings every recorder's fetch).
  useFastSign(nativeSign);
}

/** Ed25519 with the runtime's signer: the same bytes as noble's (RFC 8032 signatures are deterministic). */
export function nativeSign(secretKey: Uint8Array, message: Uint8Array): Uint8Array {
  const d = sign(null, message, privateKeyObject(secretKey));
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
}
