import { createHash, createPrivateKey, createPublicKey, hash, sign, verify } from "node:crypto";
// The modules themselves, not protocol/index.ts: the verify worker loads this and nothing else.
import { bytesToHex } from "../../protocol/bytes.ts";
import { useFastSign, useFastVerify } from "../../protocol/ed25519.ts";
import { useSha256, useSha256Stream } from "../../protocol/hash.ts";
import { Remembered } from "./remembered.ts";

const SPKI_ED25519_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const keyObjects = new Map<string, ReturnType<typeof createPublicKey>>();
const secretObjects = new Remembered<ReturnType<typeof createPrivateKey>>(17);

// The recorder signs every request it sends its server (a body's PUT, a batch) with one key:
// noble derives that key's public half again on each signature (about 0.25 ms), OpenSSL once here.
function secretObject(secretKey: Uint8Array) {
  return secretObjects.get(bytesToHex(secretKey), () =>
    createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, secretKey]), format: "der", type: "pkcs8" }),
  );
}

function keyObject(publicKey: Uint8Array) {
  const id = bytesToHex(publicKey);
  let key = keyObjects.get(id);
  if (!key) {
    key = createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, publicKey]), format: "der", type: "spki" });
    keyObjects.set(id, key);
  }
  return key;
}

// A "binary" (latin1) digest comes back as a short string, which costs about half what a Buffer does to
// return from C++ (measured: 0.5 vs 1.2 µs a call); its 32 characters are the digest's bytes.
function sha256NodeInto(data: Uint8Array, out: Uint8Array, at: number): void {
  const digest = hash("sha256", data, "binary");
  for (let i = 0; i < 32; i++) out[at + i] = digest.charCodeAt(i);
}

function sha256Node(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(32);
  sha256NodeInto(data, out, 0);
  return out;
}

function sha256NodeStream() {
  const h = createHash("sha256");
  return {
    update: (data: Uint8Array) => {
      h.update(data);
    },
    digest: () => new Uint8Array(h.digest()),
  };
}

/**
 * Uses node:crypto for SHA-256 (one-shot and incremental), Ed25519 signing (deterministic, RFC
 * 8032: the same bytes as noble's) and as the fast path of Ed25519 verification. Decisions do not
 * change: see protocol/ed25519.ts for why an OpenSSL acceptance implies the strict one.
 */
export function useNodeCrypto(): void {
  useSha256(sha256Node, sha256NodeInto);
  useSha256Stream(sha256NodeStream);
  useFastVerify((publicKey, message, signature) => verify(null, message, keyObject(publicKey), signature));
  useFastSign((secretKey, message) => sign(null, message, secretObject(secretKey)));
}
