/**
 * Frame hashing (see `chain.ts` for the layout). Apart from `chain.ts` so that a thread that only
 * hashes frames loads no schemas.
 * @module
 */
import { concatBytes, equalsHex, fromHex, isHex, u16, utf8 } from "./bytes.ts";
import { domainPrefix, sha256Into, taggedHash } from "./hash.ts";

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

// Hashing runs twice per frame, so inputs are laid out in reused buffers and digests written into
// them instead of allocated. Safe: everything here is synchronous and the hash keeps no reference.
const encoder = new TextEncoder();
let scratch = new Uint8Array(1 << 16);

function room(bytes: number): void {
  if (scratch.length < bytes) scratch = new Uint8Array(Math.max(bytes, scratch.length * 2));
}

/** Writes SHA-256("oxagen/payload/v1" 0x00 || payload bytes) into `out` at `at`. */
function payloadHashInto(payload: string, out: Uint8Array, at: number): void {
  if (!payload.isWellFormed()) throw new Error("string holds a lone surrogate");
  const prefix = domainPrefix("oxagen/payload/v1");
  room(prefix.length + payload.length * 3);
  scratch.set(prefix, 0);
  const written = encoder.encodeInto(payload, scratch.subarray(prefix.length)).written;
  sha256Into(scratch.subarray(0, prefix.length + written), out, at);
}

/** The same over the payload's UTF-8 bytes as they are. */
function payloadBytesHashInto(payload: Uint8Array, out: Uint8Array, at: number): void {
  const prefix = domainPrefix("oxagen/payload/v1");
  room(prefix.length + payload.length);
  scratch.set(prefix, 0);
  scratch.set(payload, prefix.length);
  sha256Into(scratch.subarray(0, prefix.length + payload.length), out, at);
}

/** SHA-256 of a payload's bytes, domain-separated. */
export function payloadHash(payload: string | Uint8Array): Uint8Array {
  if (typeof payload !== "string") return taggedHash("oxagen/payload/v1", payload);
  const out = new Uint8Array(32);
  payloadHashInto(payload, out, 0);
  return out;
}

const MAX_KIND_BYTES = 255;

/**
 * Hashes one chain's frames one after another. Its buffer holds the frame hash input, whose start
 * (tag, length, chain id) is written once and whose `prev` field is where each frame's hash is
 * written, ready to link the next frame: {@link FrameHasher.hash} is that field.
 */
export class FrameHasher {
  /** Why no frame of this chain can be hashed (its id has no UTF-8 form, or is too long), or null. */
  readonly problem: string | null;
  readonly #buf: Uint8Array;
  readonly #view: DataView;
  readonly #prevAt: number;
  /** The last hash computed, or the `prev` set for the next frame (a view, overwritten by the next frame). */
  readonly hash: Uint8Array;

  constructor(chainId: string) {
    const prefix = domainPrefix("oxagen/frame/v1");
    const id = chainId.isWellFormed() ? encoder.encode(chainId) : null;
    this.problem = !id ? "string holds a lone surrogate" : id.length > 0xffff ? "chain id too long" : null;
    const start = id && !this.problem ? concatBytes(prefix, u16(id.length), id) : new Uint8Array(0);
    this.#buf = new Uint8Array(start.length + 8 + 32 + 8 + 1 + MAX_KIND_BYTES + 32);
    this.#buf.set(start);
    this.#view = new DataView(this.#buf.buffer);
    this.#prevAt = start.length + 8;
    this.hash = this.#buf.subarray(this.#prevAt, this.#prevAt + 32);
  }

  /** Hashes a frame given by its fields over the current `prev`. Throws where {@link frameHash} throws. */
  frame(frame: Frame): void {
    if (!frame.kind.isWellFormed()) throw new Error("string holds a lone surrogate");
    const at = this.#header(frame.seq, frame.t);
    const kind = encoder.encodeInto(frame.kind, this.#buf.subarray(at + 1, at + 1 + MAX_KIND_BYTES));
    if (kind.read !== frame.kind.length) throw new RangeError("kind too long");
    this.#buf[at] = kind.written;
    const end = at + 1 + kind.written;
    payloadHashInto(frame.payload, this.#buf, end);
    sha256Into(this.#buf.subarray(0, end + 32), this.#buf, this.#prevAt);
  }

  /**
   * The same for a frame whose kind and payload are given as their UTF-8 bytes: the kind is
   * `src[kindStart … kindEnd)` (read in place: a line's bytes need no copy of their own).
   */
  bytes(seq: number, t: number, src: Uint8Array, kindStart: number, kindEnd: number, payload: Uint8Array): void {
    const at = this.#header(seq, t);
    const length = kindEnd - kindStart;
    if (length > MAX_KIND_BYTES) throw new RangeError("kind too long");
    const buf = this.#buf;
    buf[at] = length;
    for (let i = 0; i < length; i++) buf[at + 1 + i] = src[kindStart + i]!;
    const end = at + 1 + length;
    payloadBytesHashInto(payload, buf, end);
    sha256Into(buf.subarray(0, end + 32), buf, this.#prevAt);
  }

  // Writes seq and t around prev; returns where the kind's length byte goes.
  #header(seq: number, t: number): number {
    if (!Number.isSafeInteger(seq) || seq < 0 || !Number.isSafeInteger(t) || t < 0) {
      throw new RangeError("seq and t must be non-negative safe integers");
    }
    if (this.problem) throw new Error(this.problem);
    const view = this.#view;
    const at = this.#prevAt + 32;
    view.setUint32(this.#prevAt - 8, Math.floor(seq / 2 ** 32));
    view.setUint32(this.#prevAt - 4, seq >>> 0);
    view.setUint32(at, Math.floor(t / 2 ** 32));
    view.setUint32(at + 4, t >>> 0);
    return at + 8;
  }
}

/** The hash of one frame, given the hash of the frame before it (or the genesis hash). */
export function frameHash(chainId: string, frame: Frame, prev: Uint8Array): Uint8Array {
  const h = new FrameHasher(chainId);
  h.hash.set(prev);
  h.frame(frame);
  return h.hash.slice();
}

/**
 * Recomputes the hash of frames `from` … `to − 1` and hands each to `visit` (a view, valid only
 * during the call), saying whether it equals the hash the frame carries (false when it carries
 * none). Where a frame carries the hash its holder claims, that claimed hash (when it
 * is well-formed hex) links the next frame, so one edited frame breaks only its own hash, and any
 * slice can be hashed on its own (in parallel with others). A frame that cannot be hashed (bad
 * seq, time or kind, a lone surrogate) gets 32 zero bytes.
 */
export function visitFrameHashes(
  chainId: string,
  frames: readonly HashedFrame[],
  from: number,
  to: number,
  visit: (index: number, hash: Uint8Array, matchesClaim: boolean) => void,
): void {
  const h = new FrameHasher(chainId);
  const before = from > 0 ? frames[from - 1]!.hash : undefined;
  if (from === 0) h.hash.set(genesisHash(chainId));
  else if (before !== undefined && isHex(before, 32)) h.hash.set(fromHex(before, 32));
  else h.hash.set(hashFrames(chainId, frames, 0, from).at(-1)!);
  const hash = h.hash;
  for (let index = from; index < to; index++) {
    const frame = frames[index]!;
    try {
      h.frame(frame);
    } catch {
      hash.fill(0);
    }
    const matches = frame.hash !== undefined && equalsHex(hash, frame.hash);
    visit(index, hash, matches);
    // A claimed hash that matches is well-formed hex, so the common case skips the hex check.
    if (!matches && frame.hash !== undefined && isHex(frame.hash, 32)) hash.set(fromHex(frame.hash, 32));
  }
}

/** Recomputes the hash of frames `from` … `to − 1` (see {@link visitFrameHashes}). */
export function hashFrames(chainId: string, frames: readonly HashedFrame[], from = 0, to = frames.length): Uint8Array[] {
  const hashes: Uint8Array[] = [];
  visitFrameHashes(chainId, frames, from, to, (_index, hash) => hashes.push(hash.slice()));
  return hashes;
}
