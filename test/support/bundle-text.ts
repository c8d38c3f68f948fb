// Bundles written from text, for tests: version 1 (one JSON document), as servers wrote them
// before bundles were streamed, and version 2 from its lines as given, so a test can write what
// no server would and still sign it.
import {
  BUNDLE_PREFIX,
  bundleSigningInput,
  bundleV2SigningInput,
  bytesToHex,
  type Manifest,
  sha256,
  sign,
  utf8,
} from "../../protocol/index.ts";

/** Writes a version-1 bundle file: the manifest as JSON, signed with the server's secret key. */
export function writeBundleV1(manifest: Manifest, serverSecretKey: Uint8Array, serverKeyId: string): string {
  return writeBundleV1Text(JSON.stringify(manifest), serverSecretKey, serverKeyId);
}

/** Writes a version-1 bundle file around manifest text exactly as given. */
export function writeBundleV1Text(manifestText: string, serverSecretKey: Uint8Array, serverKeyId: string): string {
  const sig = bytesToHex(sign(serverSecretKey, bundleSigningInput(manifestText)));
  return `${BUNDLE_PREFIX}${manifestText},"signature":{"key_id":"${serverKeyId}","sig":"${sig}"}}\n`;
}

/** A version-2 bundle's lines before its signature line (the file's text without it, split at LF). */
export function bundleLines(bundle: string): string[] {
  const lines = bundle.split("\n");
  while (lines.at(-1) === "") lines.pop();
  return lines.slice(0, -1);
}

/** Writes a version-2 bundle from its lines as given (each gets an LF), then signs them. */
export function signBundleLines(lines: readonly string[], serverSecretKey: Uint8Array, serverKeyId: string): string {
  const text = lines.map((l) => `${l}\n`).join("");
  const sig = bytesToHex(sign(serverSecretKey, bundleV2SigningInput(sha256(utf8(text)))));
  return `${text}{"signature":{"key_id":"${serverKeyId}","sig":"${sig}"}}\n`;
}
