/**
 * The export bundle's layouts and signatures (see `bundle.ts` and `bundle-stream.ts`). Apart from
 * them so that a thread that checks signatures loads no schemas.
 * @module
 */
import { fromHex, utf8 } from "./bytes.ts";
import { verifyStrict } from "./ed25519.ts";
import { domainPrefix, sha256 } from "./hash.ts";

/** The payload type of a version-1 bundle; it names the manifest version. */
export const BUNDLE_PAYLOAD_TYPE = "application/vnd.oxagen.bundle.v1+json";
/** Everything a version-1 bundle file holds before the manifest's text. */
export const BUNDLE_PREFIX = `{"oxagen_bundle":1,"payload_type":"${BUNDLE_PAYLOAD_TYPE}","manifest":`;
const SUFFIX_RE = /,"signature":\{"key_id":"([0-9a-f]{16})","sig":"([0-9a-f]{128})"\}\}\n?$/;

/** The payload type of a version-2 bundle (JSON lines). */
export const BUNDLE_V2_PAYLOAD_TYPE = "application/vnd.oxagen.bundle.v2+jsonl";
/** Everything a version-2 bundle file holds before the rest of its head line. */
export const BUNDLE_V2_PREFIX = `{"oxagen_bundle":2,"payload_type":"${BUNDLE_V2_PAYLOAD_TYPE}",`;
/** A version-2 bundle's last line (its final LF may be absent). */
export const SIGNATURE_LINE_RE = /^\{"signature":\{"key_id":"([0-9a-f]{16})","sig":"([0-9a-f]{128})"\}\}\n?$/;

/** Which layout a bundle file starts with, or why it starts with none this verifier knows. */
export type BundleVersion = { ok: true; version: 1 | 2 } | { ok: false; code: "BUNDLE_LAYOUT" | "UNSUPPORTED_VERSION"; message: string };

/** The version a bundle file says it is in, from its first bytes (at least the first 100). */
export function bundleVersion(start: string): BundleVersion {
  if (start.startsWith(BUNDLE_PREFIX)) return { ok: true, version: 1 };
  if (start.startsWith(BUNDLE_V2_PREFIX)) return { ok: true, version: 2 };
  const version = /^\{"oxagen_bundle":(\d+)/.exec(start);
  if (version && version[1] !== "1" && version[1] !== "2") {
    return {
      ok: false,
      code: "UNSUPPORTED_VERSION",
      message: `bundle format ${version[1]} is not one this verifier knows (it knows 1 and 2)`,
    };
  }
  if (/^\{"oxagen_bundle":[12],"payload_type":"/.test(start)) {
    return { ok: false, code: "UNSUPPORTED_VERSION", message: "the bundle's payload type is not one this verifier knows" };
  }
  return { ok: false, code: "BUNDLE_LAYOUT", message: "the file does not start the way an Oxagen export bundle does" };
}

/** A version-1 bundle file split into its parts, or why it cannot be. */
export type SplitBundle =
  | { ok: true; manifestText: string; keyId: string; sig: string; start: number; suffixLength: number }
  | { ok: false; code: "BUNDLE_LAYOUT" | "UNSUPPORTED_VERSION"; message: string };

/** Splits a version-1 bundle file into the manifest text and the signature, checking the exact layout. */
export function splitBundle(text: string): SplitBundle {
  const version = bundleVersion(text.slice(0, 200));
  if (!version.ok) return version;
  if (version.version !== 1) return { ok: false, code: "BUNDLE_LAYOUT", message: "the file is not a version-1 bundle" };
  const tail = text.slice(-260);
  const match = SUFFIX_RE.exec(tail);
  if (!match) return { ok: false, code: "BUNDLE_LAYOUT", message: "the file does not end with a bundle signature in the exported layout" };
  const manifestText = text.slice(BUNDLE_PREFIX.length, text.length - match[0].length);
  return { ok: true, manifestText, keyId: match[1]!, sig: match[2]!, start: BUNDLE_PREFIX.length, suffixLength: match[0].length };
}

/** The exact bytes a version-1 bundle signature covers, given the manifest's text or its UTF-8 bytes. */
export function bundleSigningInput(manifest: string | Uint8Array): Uint8Array {
  return signingInput("oxagen/bundle/v1", sha256(typeof manifest === "string" ? utf8(manifest) : manifest));
}

/** The exact bytes a version-2 bundle signature covers, given SHA-256 of every byte before the signature line. */
export function bundleV2SigningInput(digest: Uint8Array): Uint8Array {
  return signingInput("oxagen/bundle/v2", digest);
}

function signingInput(tag: string, digest: Uint8Array): Uint8Array {
  const prefix = domainPrefix(tag);
  const out = new Uint8Array(prefix.length + digest.length);
  out.set(prefix);
  out.set(digest, prefix.length);
  return out;
}

/** True when `sig` (hex) is a valid Ed25519 signature over `input` (a signing input above) under `serverKey`. */
export function bundleSignatureValid(input: Uint8Array, sig: string, serverKey: Uint8Array): boolean {
  try {
    return verifyStrict(serverKey, input, fromHex(sig, 64));
  } catch {
    return false;
  }
}

/**
 * True when a JSON text is exactly `JSON.stringify` of the value it parses to: no white space, no
 * duplicate member, every string escaped one way (see record-format.md).
 */
export function inExportedForm(value: unknown, text: string): boolean {
  try {
    return JSON.stringify(value) === text;
  } catch {
    return false;
  }
}
