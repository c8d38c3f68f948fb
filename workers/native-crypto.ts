import { createHash, createPublicKey, verify } from "node:crypto";
import { bytesToHex, useFastVerify, useSha256, useSha256Stream } from "../protocol/index.ts";

type PublicKey = ReturnType<typeof createPublicKey>;

const keys = new Map<string, PublicKey>();

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
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
}
