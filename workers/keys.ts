import { fromHex, keyIdFor, publicKeyOf } from "../protocol/index.ts";
import { AppError } from "./errors.ts";

/** The server's signing key, from the OXAGEN_SIGNING_KEY secret (32-byte Ed25519 seed, 64 hex). */
export interface ServerKey {
  secret: Uint8Array;
  pub: Uint8Array;
  keyId: string;
}

let cached: { hex: string; key: ServerKey } | null = null;

/** The server key; a missing or malformed secret is a deployment fault (500), never the caller's. */
export function serverKey(env: Pick<Env, "OXAGEN_SIGNING_KEY">): ServerKey {
  const hex = env.OXAGEN_SIGNING_KEY;
  if (cached?.hex === hex) return cached.key;
  let secret: Uint8Array;
  try {
    secret = fromHex(hex, 32);
  } catch (cause) {
    throw new AppError(500, "server_misconfigured", "The server's signing key is not configured.", { cause });
  }
  const pub = publicKeyOf(secret);
  const key = { secret, pub, keyId: keyIdFor(pub) };
  cached = { hex, key };
  return key;
}
