/**
 * Byte helpers shared by every side. Hex is the only binary-to-text encoding the record
 * uses: lowercase, even length, nothing else accepted.
 * @module
 */
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";

export { bytesToHex, concatBytes };

const HEX_RE = /^(?:[0-9a-f]{2})*$/;
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** UTF-8 bytes of a string. Throws on a lone surrogate, which has no UTF-8 form. */
export function utf8(text: string): Uint8Array {
  if (!text.isWellFormed()) throw new Error("string holds a lone surrogate");
  return utf8ToBytes(text);
}

/** Decodes UTF-8, throwing on any invalid sequence instead of substituting U+FFFD. */
export function fromUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

/** True when `text` is lowercase hex of exactly `bytes` bytes (any even length when omitted). */
export function isHex(text: unknown, bytes?: number): text is string {
  if (typeof text !== "string" || !HEX_RE.test(text)) return false;
  return bytes === undefined || text.length === bytes * 2;
}

/** Decodes strict lowercase hex; throws on anything else. */
export function fromHex(text: string, bytes?: number): Uint8Array {
  if (!isHex(text, bytes)) throw new Error(bytes ? `expected ${bytes} bytes of lowercase hex` : "expected lowercase hex");
  return hexToBytes(text);
}

/** Big-endian unsigned 16-bit encoding. */
export function u16(n: number): Uint8Array {
  if (!Number.isInteger(n) || n < 0 || n > 0xffff) throw new RangeError("u16 out of range");
  return Uint8Array.of(n >>> 8, n & 0xff);
}

/** Big-endian unsigned 64-bit encoding of a non-negative safe integer. */
export function u64(n: number): Uint8Array {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError("u64 needs a non-negative safe integer");
  const out = new Uint8Array(8);
  const view = new DataView(out.buffer);
  view.setUint32(0, Math.floor(n / 2 ** 32));
  view.setUint32(4, n >>> 0);
  return out;
}

/** Constant-time comparison of two byte strings of equal length. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) HEX_VALUE["0123456789abcdef".charCodeAt(i)] = i;

/** True when `bytes` equals the lowercase hex `hex`, without allocating. */
export function equalsHex(bytes: Uint8Array, hex: string): boolean {
  if (hex.length !== bytes.length * 2) return false;
  let diff = 0;
  for (let i = 0; i < bytes.length; i++) {
    const hi = HEX_VALUE[hex.charCodeAt(2 * i)] ?? -1;
    const lo = HEX_VALUE[hex.charCodeAt(2 * i + 1)] ?? -1;
    if (hi < 0 || lo < 0) return false;
    diff |= bytes[i]! ^ ((hi << 4) | lo);
  }
  return diff === 0;
}
