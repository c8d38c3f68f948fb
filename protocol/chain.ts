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
import { bytesToHex } from "./bytes.ts";
import { type Frame, frameHash, genesisHash, type HashedFrame, hashEquals, hashFrames } from "./frame-hash.ts";
import { type FrameKind, isFrameKind, PAYLOADS } from "./frames.ts";
import { ChainId } from "./ids.ts";
import { readRecordJson } from "./json.ts";

export * from "./frame-hash.ts";

/** The largest frame payload, in bytes of UTF-8. */
export const MAX_PAYLOAD_BYTES = 64 * 1024;

/** zod schema of a {@link Frame} on the wire (structure only; see {@link frameProblem} for the rest). */
export const FrameWire = z.strictObject({
  seq: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  t: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  kind: z.string().min(1).max(64),
  payload: z.string().min(2).max(MAX_PAYLOAD_BYTES),
});

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

/** One problem found by {@link verifyChain}. */
export interface ChainProblem {
  seq: number;
  code: "SEQ_GAP" | "SEQ_DUPLICATE" | "SEQ_ORDER" | "FRAME_INVALID" | "FRAME_HASH_MISMATCH" | "TIME_REGRESSION";
  message: string;
}

/** Each frame's {@link checkFrame} result, by position: what {@link verifyChain} needs besides the hashes. */
export interface CheckedFrames {
  payloads: (ParsedPayload | null)[];
  problems: (string | null)[];
}

/** Runs {@link checkFrame} on every frame; needs no hashes, so it can run while they are computed elsewhere. */
export function checkFrames(frames: readonly Frame[], progress?: (index: number) => void): CheckedFrames {
  const payloads: (ParsedPayload | null)[] = [];
  const problems: (string | null)[] = [];
  for (let index = 0; index < frames.length; index++) {
    if (progress && (index & 8191) === 0) progress(index);
    const { problem, payload } = checkFrame(frames[index]!);
    payloads.push(payload);
    problems.push(problem);
  }
  return { payloads, problems };
}

/**
 * Checks every frame of a chain that starts at seq 0 — seq continuity, kind and payload form, its
 * recomputed hash against the one it carries (see {@link hashFrames}), time order — and reports
 * what does not fit. Returns each frame's recomputed hash and parsed payload (index = position)
 * and the problems. `hashes` may be given when they were computed elsewhere (e.g. another thread),
 * and `checked` when {@link checkFrames} already ran. Time going backwards is reported but is not
 * a break: clocks move.
 */
export function verifyChain(
  chainId: string,
  frames: readonly HashedFrame[],
  progress?: (index: number) => void,
  hashes?: Uint8Array[],
  checked?: CheckedFrames,
): { hashes: Uint8Array[]; payloads: (ParsedPayload | null)[]; problems: ChainProblem[] } {
  const recomputed = hashes ?? hashFrames(chainId, frames);
  const { payloads, problems: frameProblems } = checked ?? checkFrames(frames, progress);
  const problems: ChainProblem[] = [];
  let lastT = 0;
  for (let index = 0; index < frames.length; index++) {
    const frame = frames[index]!;
    if (frame.seq !== index) {
      const code = frame.seq < index ? (frames[index - 1]?.seq === frame.seq ? "SEQ_DUPLICATE" : "SEQ_ORDER") : "SEQ_GAP";
      problems.push({ seq: index, code, message: `frame at position ${index} has seq ${frame.seq}` });
    }
    const problem = frameProblems[index];
    if (problem) problems.push({ seq: index, code: "FRAME_INVALID", message: problem });
    if (frame.t < lastT) problems.push({ seq: index, code: "TIME_REGRESSION", message: `time goes back ${lastT - frame.t} ms` });
    lastT = Math.max(lastT, frame.t);
    if (frame.hash !== undefined && !hashEquals(recomputed[index]!, frame.hash)) {
      problems.push({ seq: index, code: "FRAME_HASH_MISMATCH", message: "content does not match the frame's recorded hash" });
    }
  }
  return { hashes: recomputed, payloads, problems };
}

/** Lowercase hex of a hash. */
export const hex = bytesToHex;
