import { createPublicKey, hash, verify } from "node:crypto";
// The modules themselves, not protocol/index.ts: the verify worker loads this and nothing else.
import { bytesToHex } from "../../protocol/bytes.ts";
import { useFastVerify } from "../../protocol/ed25519.ts";
import { useSha256 } from "../../protocol/hash.ts";

const SPKI_ED25519_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const keyObjects = new Map<string, ReturnType<typeof createPublicKey>>();

function keyObject(publicKey: Uint8Array) {
  const id = bytesToHex(publicKey);
  let key = keyObjects.get(id);
  if (!key) {
    key = createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, publicKey]), format: "der", type: "spki" });
    keyObjects.set(id, key);
  }
  return key;
}

/**
 * Uses node:crypto for SHA-256 and as the fast path of Ed25519 verification. Decisions do not
 * change: see protocol/ed25519.ts for why an OpenSSL acceptance implies the strict one.
 */
export function useNodeCrypto(): void {
  useSha256((data) => {
    const digest = hash("sha256", data, "buffer");
    return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
  });
  useFastVerify((publicKey, message, signature) => verify(null, message, keyObject(publicKey), signature));
}
