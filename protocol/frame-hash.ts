/**
 * Frame hashing (see `chain.ts` for the layout). Apart from `chain.ts` so that a thread that only
 * hashes frames loads no schemas.
 * @module
 */
import { concatBytes, equalsHex, fromHex, isHex, u16, utf8 } from "./bytes.ts";
import { domainPrefix, sha256, taggedHash } from "./hash.ts";

/** A frame as it travels and is stored: the payload is the exact Record JSON text. */
export interface Frame {
  /** Position in the chain, from 0, contiguous. */
  seq: number;
  /** Milliseconds since the Unix epoch, by the recording computer's clock. */
  t: number;
  /** The frame kind (see `frames.ts`). */
  kind: string;
  /** The payload's Record JSON text, verbatim. */
  payload: string;
}

/** A frame with the hash its holder says it has (as an export bundle carries it). */
export interface HashedFrame extends Frame {
  hash?: string;
}

/** The hash every chain starts from. */
export function genesisHash(chainId: string): Uint8Array {
  const id = utf8(chainId);
  return taggedHash("oxagen/genesis/v1", u16(id.length), id);
}

// Hashing runs once or twice per frame, so inputs are laid out in one reused buffer instead of
// concatenated copies. Safe: everything here is synchronous and the hash keeps no reference.
const encoder = new TextEncoder();
let scratch = new Uint8Array(1 << 16);
let view = new DataView(scratch.buffer);

function room(bytes: number): void {
  if (scratch.length >= bytes) return;
  scratch = new Uint8Array(Math.max(bytes, scratch.length * 2));
  view = new DataView(scratch.buffer);
}

// The caller has made room for `at + text.length * 3` bytes: growing here would drop what it wrote.
function putText(text: string, at: number): number {
  if (!text.isWellFormed()) throw new Error("string holds a lone surrogate");
  if (scratch.length < at + text.length * 3) throw new RangeError("hash buffer too small");
  return encoder.encodeInto(text, scratch.subarray(at)).written;
}

/** SHA-256 of a payload's bytes, domain-separated. */
export function payloadHash(payload: string | Uint8Array): Uint8Array {
  const prefix = domainPrefix("oxagen/payload/v1");
  if (typeof payload !== "string") return taggedHash("oxagen/payload/v1", payload);
  room(prefix.length + payload.length * 3);
  scratch.set(prefix, 0);
  const written = putText(payload, prefix.length);
  return sha256(scratch.subarray(0, prefix.length + written));
}

/** The hash of one frame, given the hash of the frame before it (or the genesis hash). */
export function frameHash(chainId: string, frame: Frame, prev: Uint8Array): Uint8Array {
  return frameHasher(chainId)(frame, prev);
}

// frameHash for many frames of one chain: the tag, length and chain id that start every frame
// hash input are encoded once. Throws exactly where frameHash throws.
function frameHasher(chainId: string): (frame: Frame, prev: Uint8Array) => Uint8Array {
  const prefix = domainPrefix("oxagen/frame/v1");
  const id = chainId.isWellFormed() ? encoder.encode(chainId) : null;
  const start = id && id.length <= 0xffff ? concatBytes(prefix, u16(id.length), id) : null;
  return (frame, prev) => {
    const digest = payloadHash(frame.payload);
    if (!Number.isSafeInteger(frame.seq) || frame.seq < 0 || !Number.isSafeInteger(frame.t) || frame.t < 0) {
      throw new RangeError("seq and t must be non-negative safe integers");
    }
    if (!id) throw new Error("string holds a lone surrogate");
    if (!start) throw new RangeError("chain id too long");
    let at = start.length;
    room(at + 8 + 32 + 8 + 1 + frame.kind.length * 3 + 32);
    scratch.set(start, 0);
    view.setUint32(at, Math.floor(frame.seq / 2 ** 32));
    view.setUint32(at + 4, frame.seq >>> 0);
    scratch.set(prev, at + 8);
    at += 40;
    view.setUint32(at, Math.floor(frame.t / 2 ** 32));
    view.setUint32(at + 4, frame.t >>> 0);
    at += 8;
    const kindLen = putText(frame.kind, at + 1);
    if (kindLen > 255) throw new RangeError("kind too long");
    scratch[at] = kindLen;
    at += 1 + kindLen;
    scratch.set(digest, at);
    return sha256(scratch.subarray(0, at + 32));
  };
}

/**
 * Recomputes the hash of frames `from` … `to − 1`. Where a frame carries the hash its holder
 * claims, that claimed hash (when it is well-formed hex) links the next frame, so one edited frame
 * breaks only its own hash, and any slice can be hashed on its own (in parallel with others).
 */
export function hashFrames(chainId: string, frames: readonly HashedFrame[], from = 0, to = frames.length): Uint8Array[] {
  const hashes: Uint8Array[] = [];
  const before = from > 0 ? frames[from - 1]!.hash : undefined;
  let prev = from === 0 ? genesisHash(chainId) : before !== undefined && isHex(before, 32) ? fromHex(before, 32) : null;
  if (!prev) prev = hashFrames(chainId, frames, 0, from).at(-1)!;
  const hashOf = frameHasher(chainId);
  for (let index = from; index < to; index++) {
    const frame = frames[index]!;
    let hash: Uint8Array;
    try {
      hash = hashOf(frame, prev);
    } catch {
      hash = new Uint8Array(32);
    }
    hashes.push(hash);
    // A claimed hash that matches is well-formed hex, so the common case skips the hex check.
    prev = frame.hash === undefined || hashEquals(hash, frame.hash) || !isHex(frame.hash, 32) ? hash : fromHex(frame.hash, 32);
  }
  return hashes;
}

/** True when `hash` equals the hex `expected`. */
export function hashEquals(hash: Uint8Array, expected: string): boolean {
  return equalsHex(hash, expected);
}
