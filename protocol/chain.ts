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
import { type ChainProblem, checkFrame, checkFrames, FrameProblems, MAX_PAYLOAD_CHARS } from "./frame-check.ts";
import { type Frame, frameHash, genesisHash, type HashedFrame, hashFrames } from "./frame-hash.ts";
import { type FrameKind, PAYLOADS } from "./frames.ts";
import { ChainId } from "./ids.ts";

export * from "./frame-check.ts";
export * from "./frame-hash.ts";
export * from "./frame-lines.ts";

/** zod schema of a {@link Frame} on the wire (structure only; see {@link frameProblem} for the rest). */
export const FrameWire = z.strictObject({
  seq: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  t: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  kind: z.string().min(1).max(64),
  payload: z.string().min(2).max(MAX_PAYLOAD_CHARS),
});

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

/**
 * Checks every frame of a chain that starts at seq 0 (see {@link FrameProblems}) and returns
 * each frame's recomputed hash (index = position; see {@link hashFrames}) and the problems.
 */
export function verifyChain(chainId: string, frames: readonly HashedFrame[]): { hashes: Uint8Array[]; problems: ChainProblem[] } {
  const hashes = hashFrames(chainId, frames);
  return { hashes, problems: new FrameProblems().add(checkFrames(chainId, frames, 0, frames.length)) };
}

/** Lowercase hex of a hash. */
export const hex = bytesToHex;
