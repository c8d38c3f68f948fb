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

/** A SHA-256 implementation that writes the 32-byte digest into `out` at `at`. */
export type Sha256Into = (data: Uint8Array, out: Uint8Array, at: number) => void;

let impl: Sha256 = (data) => nobleSha256(data);
let intoImpl: Sha256Into = (data, out, at) => out.set(impl(data), at);

/**
 * Replaces the SHA-256 implementation (e.g. with `node:crypto` in the CLI). `into`, when given,
 * is the same function writing into a buffer, for hot loops that should not allocate.
 */
export function useSha256(fn: Sha256, into?: Sha256Into): void {
  impl = fn;
  intoImpl = into ?? ((data, out, at) => out.set(fn(data), at));
}

/** An incremental SHA-256: bytes fed in pieces, one digest at the end. */
export interface Sha256Stream {
  update(data: Uint8Array): void;
  digest(): Uint8Array;
}

let streamImpl = (): Sha256Stream => {
  const h = nobleSha256.create();
  return {
    update: (data) => {
      h.update(data);
    },
    digest: () => h.digest(),
  };
};

/** Replaces the incremental SHA-256 (e.g. with `node:crypto`'s `createHash`); the same function, faster. */
export function useSha256Stream(create: () => Sha256Stream): void {
  streamImpl = create;
}

/** A new incremental SHA-256. */
export function sha256Stream(): Sha256Stream {
  return streamImpl();
}

/** Writes SHA-256 of `data` into `out` at `at` (32 bytes). */
export function sha256Into(data: Uint8Array, out: Uint8Array, at: number): void {
  intoImpl(data, out, at);
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
