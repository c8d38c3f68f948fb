/**
 * The export bundle's layout (see `bundle.ts`). Apart from `bundle.ts` so that a thread that only
 * needs the manifest's text loads no schemas.
 * @module
 */

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
