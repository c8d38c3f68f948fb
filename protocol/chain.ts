/**
 * The chain: frames linked by hash. All functions here are pure.
 *
 * ```
 * genesis(chain)  = SHA-256("oxagen/genesis/v1" 0x00 || u16(len chain) || chain)
 * payload_hash    = SHA-256("oxagen/payload/v1" 0x00 || payload bytes)
 * frame_hash      = SHA-256("oxagen/frame/v1" 0x00 || u16(len chain) || chain || u64(seq) || prev
 *                           || u64(t) || u8(len kind) || kind || payload_hash)
 * prev            = frame_hash of seq - 1, or genesis(chain) for seq 0
 * ```
 * Integers are big-endian; strings are their UTF-8 (ASCII) bytes. The payload bytes are the
 * UTF-8 bytes of the payload string exactly as the computer first wrote it; nothing is ever
 * re-serialized before hashing.
 * @module
 */
import { z } from "zod";
import { bytesToHex, concatBytes, equalsHex, fromHex, isHex, u16, u64, utf8 } from "./bytes.ts";
import { type FrameKind, isFrameKind, PAYLOADS } from "./frames.ts";
import { domainPrefix, sha256, taggedHash } from "./hash.ts";
import { ChainId } from "./ids.ts";
import { readRecordJson } from "./json.ts";

/** The largest frame payload, in bytes of UTF-8. */
export const MAX_PAYLOAD_BYTES = 64 * 1024;

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

/** zod schema of a {@link Frame} on the wire (structure only; see {@link frameProblem} for the rest). */
export const FrameWire = z.strictObject({
  seq: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  t: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  kind: z.string().min(1).max(64),
  payload: z.string().min(2).max(MAX_PAYLOAD_BYTES),
});

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

/** The header bytes a frame hash covers, given the payload hash. */
export function frameHeader(chainId: string, seq: number, prev: Uint8Array, t: number, kind: string, payloadDigest: Uint8Array): Uint8Array {
  const id = utf8(chainId);
  const k = utf8(kind);
  if (k.length > 255) throw new RangeError("kind too long");
  return concatBytes(u16(id.length), id, u64(seq), prev, u64(t), Uint8Array.of(k.length), k, payloadDigest);
}

/** The hash of one frame, given the hash of the frame before it (or the genesis hash). */
export function frameHash(chainId: string, frame: Frame, prev: Uint8Array): Uint8Array {
  const digest = payloadHash(frame.payload);
  if (!Number.isSafeInteger(frame.seq) || frame.seq < 0 || !Number.isSafeInteger(frame.t) || frame.t < 0) {
    throw new RangeError("seq and t must be non-negative safe integers");
  }
  const prefix = domainPrefix("oxagen/frame/v1");
  let at = prefix.length + 2;
  room(at + chainId.length * 3 + 8 + 32 + 8 + 1 + frame.kind.length * 3 + 32);
  scratch.set(prefix, 0);
  const idLen = putText(chainId, at);
  if (idLen > 0xffff) throw new RangeError("chain id too long");
  view.setUint16(prefix.length, idLen);
  at += idLen;
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
}

/** A payload as parsed (Record JSON object). */
export type ParsedPayload = Record<string, unknown>;

/**
 * Checks a frame's kind, size and payload form, parsing the payload once. Returns the problem
 * (null when the frame may enter a chain) and the parsed payload (null when it is not an object).
 */
export function checkFrame(frame: Frame): { problem: string | null; payload: ParsedPayload | null } {
  if (frame.payload.length > MAX_PAYLOAD_BYTES) return { problem: "payload over 64 KiB", payload: null };
  const read = readRecordJson(frame.payload);
  if (read.problem !== null) return { problem: `payload ${read.problem}`, payload: null };
  const value = read.value;
  const payload = value !== null && typeof value === "object" && !Array.isArray(value) ? value : null;
  if (!payload) return { problem: "payload is not a JSON object", payload: null };
  if (!isFrameKind(frame.kind)) return { problem: `unknown frame kind "${frame.kind}"`, payload };
  return { problem: null, payload };
}

/** Why a frame may not enter a chain (kind, payload form, size), or null when it may. */
export function frameProblem(frame: Frame): string | null {
  return checkFrame(frame).problem;
}

/** Checks a frame fully, including its payload against its kind's schema; returns the problem or null. */
export function frameSchemaProblem(frame: Frame): string | null {
  const { problem, payload } = checkFrame(frame);
  if (problem) return problem;
  const result = PAYLOADS[frame.kind as FrameKind].safeParse(payload);
  if (result.success) return null;
  const issue = result.error.issues[0];
  return `payload of ${frame.kind}: ${issue ? `${issue.path.join(".") || "(root)"}: ${issue.message}` : "invalid"}`;
}

/** A chain head: how many frames it holds and the hash of the last (genesis when empty). */
export interface ChainHead {
  chainId: string;
  count: number;
  head: Uint8Array;
}

/** An empty chain's head. */
export function emptyHead(chainId: string): ChainHead {
  ChainId.parse(chainId);
  return { chainId, count: 0, head: genesisHash(chainId) };
}

/**
 * Appends one frame to a head: checks its seq is next and returns the new head and the frame's
 * hash. Throws when the seq is not the next one.
 */
export function appendFrame(head: ChainHead, frame: Frame): { head: ChainHead; hash: Uint8Array } {
  if (frame.seq !== head.count) throw new Error(`expected seq ${head.count}, got ${frame.seq}`);
  const hash = frameHash(head.chainId, frame, head.head);
  return { head: { chainId: head.chainId, count: head.count + 1, head: hash }, hash };
}

/** A frame with the hash its holder says it has (as an export bundle carries it). */
export interface HashedFrame extends Frame {
  hash?: string;
}

/** One problem found by {@link verifyChain}. */
export interface ChainProblem {
  seq: number;
  code: "SEQ_GAP" | "SEQ_DUPLICATE" | "SEQ_ORDER" | "FRAME_INVALID" | "FRAME_HASH_MISMATCH" | "TIME_REGRESSION";
  message: string;
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
  for (let index = from; index < to; index++) {
    const frame = frames[index]!;
    let hash: Uint8Array;
    try {
      hash = frameHash(chainId, frame, prev);
    } catch {
      hash = new Uint8Array(32);
    }
    hashes.push(hash);
    prev = frame.hash !== undefined && isHex(frame.hash, 32) && !hashEquals(hash, frame.hash) ? fromHex(frame.hash, 32) : hash;
  }
  return hashes;
}

/**
 * Checks every frame of a chain that starts at seq 0 — seq continuity, kind and payload form, its
 * recomputed hash against the one it carries (see {@link hashFrames}), time order — and reports
 * what does not fit. Returns each frame's recomputed hash and parsed payload (index = position)
 * and the problems. `hashes` may be given when they were computed elsewhere (e.g. another thread).
 * Time going backwards is reported but is not a break: clocks move.
 */
export function verifyChain(
  chainId: string,
  frames: readonly HashedFrame[],
  progress?: (index: number) => void,
  hashes: Uint8Array[] = hashFrames(chainId, frames),
): { hashes: Uint8Array[]; payloads: (ParsedPayload | null)[]; problems: ChainProblem[] } {
  const problems: ChainProblem[] = [];
  const payloads: (ParsedPayload | null)[] = [];
  let lastT = 0;
  for (let index = 0; index < frames.length; index++) {
    const frame = frames[index]!;
    if (progress && (index & 8191) === 0) progress(index);
    if (frame.seq !== index) {
      const code = frame.seq < index ? (frames[index - 1]?.seq === frame.seq ? "SEQ_DUPLICATE" : "SEQ_ORDER") : "SEQ_GAP";
      problems.push({ seq: frame.seq, code, message: `frame at position ${index} has seq ${frame.seq}` });
    }
    const { problem, payload } = checkFrame(frame);
    payloads.push(payload);
    if (problem) problems.push({ seq: frame.seq, code: "FRAME_INVALID", message: problem });
    if (frame.t < lastT) problems.push({ seq: frame.seq, code: "TIME_REGRESSION", message: `time goes back ${lastT - frame.t} ms` });
    lastT = Math.max(lastT, frame.t);
    if (frame.hash !== undefined && !hashEquals(hashes[index]!, frame.hash)) {
      problems.push({ seq: frame.seq, code: "FRAME_HASH_MISMATCH", message: "content does not match the frame's recorded hash" });
    }
  }
  return { hashes, payloads, problems };
}

/** Lowercase hex of a hash. */
export const hex = bytesToHex;

/** True when `hash` equals the hex `expected`. */
export function hashEquals(hash: Uint8Array, expected: string): boolean {
  return equalsHex(hash, expected);
}
