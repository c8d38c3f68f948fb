/**
 * The export bundle's layout and signature (see `bundle.ts`). Apart from `bundle.ts` so that a
 * thread that checks them loads no schemas.
 * @module
 */
import { fromHex, utf8 } from "./bytes.ts";
import { verifyStrict } from "./ed25519.ts";
import { domainPrefix, sha256 } from "./hash.ts";

/** The bundle's payload type; it names the manifest version. */
export const BUNDLE_PAYLOAD_TYPE = "application/vnd.oxagen.bundle.v1+json";
/** Everything a bundle file holds before the manifest's text. */
export const BUNDLE_PREFIX = `{"oxagen_bundle":1,"payload_type":"${BUNDLE_PAYLOAD_TYPE}","manifest":`;
const SUFFIX_RE = /,"signature":\{"key_id":"([0-9a-f]{16})","sig":"([0-9a-f]{128})"\}\}\n?$/;

/** A bundle file split into its parts, or why it cannot be. */
export type SplitBundle =
  | { ok: true; manifestText: string; keyId: string; sig: string; start: number; suffixLength: number }
  | { ok: false; code: "BUNDLE_LAYOUT" | "UNSUPPORTED_VERSION"; message: string };

/** Splits a bundle file into the manifest text and the signature, checking the exact layout. */
export function splitBundle(text: string): SplitBundle {
  if (!text.startsWith(BUNDLE_PREFIX)) {
    const version = /^\{"oxagen_bundle":(\d+)/.exec(text);
    if (version && version[1] !== "1") {
      return { ok: false, code: "UNSUPPORTED_VERSION", message: `bundle format ${version[1]} is not one this verifier knows (it knows 1)` };
    }
    if (/^\{"oxagen_bundle":1,"payload_type":"(?!application\/vnd\.oxagen\.bundle\.v1\+json")/.test(text)) {
      return { ok: false, code: "UNSUPPORTED_VERSION", message: "the bundle's payload type is not one this verifier knows" };
    }
    return { ok: false, code: "BUNDLE_LAYOUT", message: "the file does not start the way an Oxagen export bundle does" };
  }
  const tail = text.slice(-260);
  const match = SUFFIX_RE.exec(tail);
  if (!match) return { ok: false, code: "BUNDLE_LAYOUT", message: "the file does not end with a bundle signature in the exported layout" };
  const manifestText = text.slice(BUNDLE_PREFIX.length, text.length - match[0].length);
  return { ok: true, manifestText, keyId: match[1]!, sig: match[2]!, start: BUNDLE_PREFIX.length, suffixLength: match[0].length };
}

/** The exact bytes a bundle signature covers, given the manifest's text or its UTF-8 bytes. */
export function bundleSigningInput(manifest: string | Uint8Array): Uint8Array {
  const digest = sha256(typeof manifest === "string" ? utf8(manifest) : manifest);
  const prefix = domainPrefix("oxagen/bundle/v1");
  const out = new Uint8Array(prefix.length + digest.length);
  out.set(prefix);
  out.set(digest, prefix.length);
  return out;
}

/** True when `sig` (hex) is the server's signature over the manifest (its text or its UTF-8 bytes). */
export function bundleSignatureValid(manifest: string | Uint8Array, sig: string, serverKey: Uint8Array): boolean {
  try {
    return verifyStrict(serverKey, bundleSigningInput(manifest), fromHex(sig, 64));
  } catch {
    return false;
  }
}

/**
 * True when a manifest's text is exactly `JSON.stringify` of the value it parses to: no white
 * space, no duplicate member, every string escaped one way (see record-format.md).
 */
export function inExportedForm(value: unknown, text: string): boolean {
  try {
    return JSON.stringify(value) === text;
  } catch {
    return false;
  }
}
