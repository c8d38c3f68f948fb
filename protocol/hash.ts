/**
 * SHA-256 with domain separation. The default implementation is @noble/hashes, which runs the
 * same in Node and in workerd; a Node process may install `node:crypto` as a faster drop-in
 * with {@link useSha256}. Both compute the same function, so no decision depends on the choice.
 * @module
 */
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, concatBytes, utf8 } from "./bytes.ts";

/** A SHA-256 implementation: bytes in, 32 bytes out. */
export type Sha256 = (data: Uint8Array) => Uint8Array;

let impl: Sha256 = (data) => nobleSha256(data);

/** Replaces the SHA-256 implementation (e.g. with `node:crypto` in the CLI). */
export function useSha256(fn: Sha256): void {
  impl = fn;
}

/** SHA-256 of `data`. */
export function sha256(data: Uint8Array): Uint8Array {
  return impl(data);
}

/** Lowercase hex SHA-256 of bytes, or of the UTF-8 bytes of a string. */
export function sha256Hex(data: Uint8Array | string): string {
  return bytesToHex(impl(typeof data === "string" ? utf8(data) : data));
}

const domains = new Map<string, Uint8Array>();

/** The bytes `tag || 0x00` that prefix every domain-separated hash input. */
export function domainPrefix(tag: string): Uint8Array {
  let prefix = domains.get(tag);
  if (!prefix) {
    prefix = concatBytes(utf8(tag), Uint8Array.of(0));
    domains.set(tag, prefix);
  }
  return prefix;
}

/** SHA-256(`tag` || 0x00 || parts...). */
export function taggedHash(tag: string, ...parts: Uint8Array[]): Uint8Array {
  return impl(concatBytes(domainPrefix(tag), ...parts));
}
