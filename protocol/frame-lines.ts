/**
 * Frame lines of a version-2 bundle (see `bundle-stream.ts`), checked from their bytes:
 * ```
 * {"seq":S,"t":T,"kind":K,"hash":"H","payload":P}
 * ```
 * S and T are integers, K a JSON string, H 64 lowercase hex, and P the payload's Record JSON text
 * exactly as the computer wrote it, so its bytes are the bytes the payload hash covers. No
 * schemas here: a thread that only checks frames loads no zod.
 * @module
 */
import { bytesToHex } from "./bytes.ts";
import { checkPayload, emptyChunk, type FrameChunk, tallyFrame } from "./frame-check.ts";
import { FrameHasher } from "./frame-hash.ts";

/** The bytes every frame line starts with. */
export const FRAME_LINE_START = '{"seq":';

const LF = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MAX_KIND_CHARS = 64;
// The shortest frame line is about 100 bytes, so a chunk of n bytes holds at most n / 90 frames.
const MIN_FRAME_LINE = 90;

const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));
const START = ascii(FRAME_LINE_START);
const T = ascii(',"t":');
const KIND = ascii(',"kind":');
const HASH = ascii(',"hash":"');
const PAYLOAD = ascii('","payload":');

/** Where a frame line's parts are, or why it is not a frame line. */
interface FrameLine {
  number: number;
  seq: number;
  t: number;
  /**
   * The kind, and its UTF-8 bytes: `kindStart` … `kindEnd` in the line, or `kindBytes` when it was
   * written with escapes ({@link NO_UTF8} when it holds a lone surrogate).
   */
  kind: string;
  kindStart: number;
  kindEnd: number;
  kindBytes: Uint8Array | null;
  hashStart: number;
  payloadStart: number;
  payloadEnd: number;
}

const NO_UTF8 = new Uint8Array(0);
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

class NotUtf8 extends Error {}

function decode(bytes: Uint8Array): string {
  try {
    return strict.decode(bytes);
  } catch {
    throw new NotUtf8("not UTF-8");
  }
}

function literal(buf: Uint8Array, at: number, bytes: Uint8Array): boolean {
  if (at + bytes.length > buf.length) return false;
  for (let i = 0; i < bytes.length; i++) if (buf[at + i] !== bytes[i]) return false;
  return true;
}

// A non-negative safe integer in shortest decimal form starting at `at`, into `out.number`;
// returns where it ends, or -1.
function integer(buf: Uint8Array, at: number, end: number, out: FrameLine): number {
  let i = at;
  let n = 0;
  while (i < end && buf[i]! >= 0x30 && buf[i]! <= 0x39 && i - at < 17) n = n * 10 + (buf[i++]! - 0x30);
  const digits = i - at;
  if (digits === 0 || (digits > 1 && buf[at] === 0x30) || !Number.isSafeInteger(n)) return -1;
  out.number = n;
  return i;
}

// Lowercase hex digits' values by byte; -1 for any other byte.
const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 16; i++) HEX["0123456789abcdef".charCodeAt(i)] = i;

/** Reads the frame line `start` … `end − 1` (without its LF) into `out`; returns why it is not one, or null. */
function readFrameLine(buf: Uint8Array, start: number, end: number, out: FrameLine): string | null {
  out.kindBytes = null;
  if (!literal(buf, start, START)) return "it does not start as a frame line does";
  const seqEnd = integer(buf, start + START.length, end, out);
  if (seqEnd < 0 || !literal(buf, seqEnd, T)) return "seq is not a non-negative integer";
  out.seq = out.number;
  const tEnd = integer(buf, seqEnd + T.length, end, out);
  if (tEnd < 0 || !literal(buf, tEnd, KIND)) return "t is not a non-negative integer";
  out.t = out.number;
  const q = tEnd + KIND.length;
  if (buf[q] !== QUOTE) return "kind is not a string";
  // The common case: printable ASCII with nothing escaped, so the kind's bytes are in the line.
  let i = q + 1;
  while (i < end && buf[i]! >= 0x20 && buf[i]! < 0x7f && buf[i] !== QUOTE && buf[i] !== BACKSLASH) i++;
  if (buf[i] === QUOTE) {
    out.kindStart = q + 1;
    out.kindEnd = i;
    out.kind = asciiKind(buf, q + 1, i);
  } else {
    for (; i < end && buf[i] !== QUOTE; i++) if (buf[i] === BACKSLASH) i++;
    if (i >= end) return "kind is not a string";
    const token = decode(buf.subarray(q, i + 1));
    let kind: unknown;
    try {
      kind = JSON.parse(token);
    } catch {
      return "kind is not a string";
    }
    if (typeof kind !== "string" || JSON.stringify(kind) !== token) return "kind is not written in its one JSON form";
    out.kind = kind;
    out.kindBytes = kind.isWellFormed() ? encoder.encode(kind) : NO_UTF8;
  }
  if (out.kind.length < 1 || out.kind.length > MAX_KIND_CHARS) return "kind is not a string of 1 to 64 characters";
  const h = i + 1;
  if (!literal(buf, h, HASH)) return "hash is not 64 lowercase hex characters";
  out.hashStart = h + HASH.length;
  // The 64 hex characters are checked with the hash they are compared with (claim).
  if (!literal(buf, out.hashStart + 64, PAYLOAD)) return "hash is not 64 lowercase hex characters";
  out.payloadStart = out.hashStart + 64 + PAYLOAD.length;
  out.payloadEnd = end - 1;
  if (out.payloadEnd < out.payloadStart || buf[end - 1] !== 0x7d) return "it does not end as a frame line does";
  return null;
}

// A chain has a handful of kinds: the string of each is made once and found again by its bytes.
const kinds = new Map<number, { bytes: Uint8Array; text: string }[]>();

function asciiKind(buf: Uint8Array, start: number, end: number): string {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ buf[i]!, 0x01000193);
  const known = kinds.get(h);
  for (const k of known ?? []) {
    if (k.bytes.length !== end - start) continue;
    let same = true;
    for (let i = 0; i < k.bytes.length && same; i++) same = k.bytes[i] === buf[start + i];
    if (same) return k.text;
  }
  // A copy: the line's buffer is refilled.
  const bytes = Uint8Array.prototype.slice.call(buf, start, end);
  const text = String.fromCharCode(...bytes);
  if (kinds.size < 1024) kinds.set(h, [...(known ?? []), { bytes, text }]);
  return text;
}

/**
 * Compares the claimed hash (64 hex characters at `at`) with the 32 bytes of `hash`: 0 when they
 * are the same, 1 when they differ, -1 when the claim is not lowercase hex.
 */
function claim(buf: Uint8Array, at: number, hash: Uint8Array): -1 | 0 | 1 {
  let differs: 0 | 1 = 0;
  for (let i = 0; i < 32; i++) {
    const hi = HEX[buf[at + 2 * i]!]!;
    const lo = HEX[buf[at + 2 * i + 1]!]!;
    if ((hi | lo) < 0) return -1;
    if (((hi << 4) | lo) !== hash[i]) differs = 1;
  }
  return differs;
}

function readClaim(buf: Uint8Array, at: number, into: Uint8Array): void {
  for (let i = 0; i < 32; i++) into[i] = (HEX[buf[at + 2 * i]!]! << 4) | HEX[buf[at + 2 * i + 1]!]!;
}

/** What checking a run of frame lines needs besides the bytes. */
export interface FrameLinesJob {
  chainId: string;
  /** The position of the first frame in the chain. */
  from: number;
  /** The hash the frame before the first one carries (the genesis for position 0): 32 bytes. */
  prev: Uint8Array;
  /** Whether to list the kept bodies the frames name. */
  bodies: boolean;
}

/**
 * Checks the frame lines in `buf[start … end)`, every one ending with LF, as {@link checkFrames}
 * checks frames held as objects: the same problems, hashes and tally. A line that is not a frame
 * line in the bundle's layout, or not UTF-8, ends the chunk (see {@link FrameChunk.malformed}).
 */
export function checkFrameLines(buf: Uint8Array, start: number, end: number, job: FrameLinesJob): FrameChunk {
  const chunk = emptyChunk(job.from, Math.ceil((end - start) / MIN_FRAME_LINE) + 1);
  const h = new FrameHasher(job.chainId);
  h.hash.set(job.prev);
  const line = {
    number: 0,
    seq: 0,
    t: 0,
    kind: "",
    kindStart: 0,
    kindEnd: 0,
    kindBytes: null,
    hashStart: 0,
    payloadStart: 0,
    payloadEnd: 0,
  } as FrameLine;
  let index = job.from;
  let at = start;
  try {
    while (at < end) {
      const lf = buf.indexOf(LF, at);
      if (lf < 0 || lf >= end) throw new RangeError("a frame line does not end with LF");
      const malformed = readFrameLine(buf, at, lf, line);
      if (malformed) {
        chunk.malformed = { index, message: malformed, unreadable: false };
        break;
      }
      const payloadBytes = buf.subarray(line.payloadStart, line.payloadEnd);
      const { problem, payload } = checkPayload(line.kind, decode(payloadBytes));
      if (problem) chunk.invalid.push([index, problem]);
      chunk.seqs[index - job.from] = line.seq;
      chunk.times[index - job.from] = line.t;
      tallyFrame(chunk.tally, index, line.kind, payload, job.bodies ? chunk.kept : undefined);
      try {
        // A kind with a lone surrogate has no UTF-8 form, so it has no frame hash (as frameHash throws).
        if (line.kindBytes === NO_UTF8) throw new Error("string holds a lone surrogate");
        if (line.kindBytes) h.bytes(line.seq, line.t, line.kindBytes, 0, line.kindBytes.length, payloadBytes);
        else h.bytes(line.seq, line.t, buf, line.kindStart, line.kindEnd, payloadBytes);
      } catch {
        h.hash.fill(0);
      }
      const claimed = claim(buf, line.hashStart, h.hash);
      if (claimed < 0) {
        // Not a frame line after all: the check is void from here, whatever was tallied.
        chunk.malformed = { index, message: "hash is not 64 lowercase hex characters", unreadable: false };
        break;
      }
      if (claimed > 0) {
        chunk.mismatched.push([index, bytesToHex(h.hash)]);
        readClaim(buf, line.hashStart, h.hash);
      }
      index++;
      at = lf + 1;
    }
  } catch (err) {
    if (!(err instanceof NotUtf8)) throw err;
    chunk.malformed = { index, message: "the bundle is not valid UTF-8", unreadable: true };
  }
  chunk.to = index;
  chunk.seqs = chunk.seqs.slice(0, index - job.from);
  chunk.times = chunk.times.slice(0, index - job.from);
  return chunk;
}

/** The hash a frame line carries (64 hex at its place in the layout), or null when the line is not a frame line. */
export function claimedHash(buf: Uint8Array, start: number, end: number): string | null {
  const line = {} as FrameLine;
  try {
    if (readFrameLine(buf, start, end, line)) return null;
  } catch {
    return null;
  }
  for (let k = line.hashStart; k < line.hashStart + 64; k++) if (HEX[buf[k]!]! < 0) return null;
  return String.fromCharCode.apply(null, buf.subarray(line.hashStart, line.hashStart + 64) as unknown as number[]);
}
