/**
 * Checking a chain's frames a slice at a time: each frame's form, its recomputed hash against the
 * one it carries, and what its payload adds to the coverage facts and the chain's own gaps. A
 * slice can be checked on any thread; slices merged in order give exactly what one pass over the
 * whole chain gives. No schemas here, so a thread that only checks frames loads no zod.
 * @module
 */
import { bytesToHex, equalsHex } from "./bytes.ts";
import { type Frame, type HashedFrame, visitFrameHashes } from "./frame-hash.ts";
import { readRecordJson } from "./json.ts";

/** The largest frame payload, in bytes of UTF-8. */
export const MAX_PAYLOAD_BYTES = 64 * 1024;

/** Every frame kind, in the order the coverage statement names them (`frames.ts` gives each its schema). */
export const FRAME_KIND_NAMES = [
  "agent_start",
  "turn_start",
  "policy_decision",
  "tool_requested",
  "token_denied",
  "approval_request",
  "harness_permission",
  "tool_call",
  "command",
  "file_io",
  "network",
  "turn_end",
  "subagent_start",
  "subagent_stop",
  "agent_stop",
  "llm_call",
  "error",
  "telemetry_gap",
  "oxagen:worktree_reconciled",
] as const;

const KINDS: ReadonlySet<string> = new Set(FRAME_KIND_NAMES);

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
  if (!KINDS.has(frame.kind)) return { problem: `unknown frame kind "${frame.kind}"`, payload };
  return { problem: null, payload };
}

/** A body named by a frame. */
export interface BodyMention {
  seq: number;
  role: string;
  sha256: string;
  size: number;
  kept: boolean;
  why?: string;
}

function mentionsOf(payload: ParsedPayload | null, seq: number, out: BodyMention[]): void {
  const bodies = payload?.bodies;
  if (!Array.isArray(bodies)) return;
  for (const b of bodies) {
    if (!b || typeof b !== "object") continue;
    const ref = b as Record<string, unknown>;
    out.push({
      seq,
      role: String(ref.role),
      sha256: String(ref.sha256),
      size: Number(ref.size),
      kept: ref.kept === true,
      ...(typeof ref.why === "string" ? { why: ref.why } : {}),
    });
  }
}

/** Every body reference in a chain's payloads (index = seq), in order. */
export function bodyMentions(payloads: readonly (ParsedPayload | null)[]): BodyMention[] {
  const out: BodyMention[] = [];
  payloads.forEach((payload, seq) => {
    mentionsOf(payload, seq, out);
  });
  return out;
}

/**
 * What a chain's frames add up to: the counts the coverage facts are made of (`assess.ts`) and
 * what the chain's own gaps are derived from (`gaps.ts`). Plain data, so it crosses threads.
 */
export interface PayloadTally {
  frames: number;
  /** Frames by kind, every frame counted. */
  byKind: Record<string, number>;
  /** Frames with a readable payload, by its `path` (as a string). */
  byPath: Record<string, number>;
  llmGateway: number;
  llmTranscript: number;
  /** Gateway LLM calls whose request and response bodies are both kept. */
  llmReplayable: number;
  /** `policy_decision` frames written by a hook in enforce mode. */
  enforcedHook: number;
  backfilled: number;
  /** Each `telemetry_gap` frame with a string cause. */
  reported: { seq: number; cause: string }[];
  /** The last `agent_stop` with a readable payload, and whether it says the session crashed. */
  stop: { seq: number; crashed: boolean } | null;
  /** Every body reference, in order. */
  mentions: BodyMention[];
}

/** A tally of no frames. */
export function emptyTally(): PayloadTally {
  return {
    frames: 0,
    byKind: {},
    byPath: {},
    llmGateway: 0,
    llmTranscript: 0,
    llmReplayable: 0,
    enforcedHook: 0,
    backfilled: 0,
    reported: [],
    stop: null,
    mentions: [],
  };
}

/** Adds one frame (its kind and parsed payload, null when unreadable) to a tally. */
export function tallyFrame(t: PayloadTally, seq: number, kind: string, p: ParsedPayload | null): void {
  t.frames++;
  t.byKind[kind] = (t.byKind[kind] ?? 0) + 1;
  if (!p) return;
  const path = String(p.path);
  t.byPath[path] = (t.byPath[path] ?? 0) + 1;
  if (p.backfilled === true) t.backfilled++;
  const first = t.mentions.length;
  mentionsOf(p, seq, t.mentions);
  if (kind === "llm_call") {
    if (path === "gateway") {
      t.llmGateway++;
      const kept = t.mentions
        .slice(first)
        .filter((b) => b.kept)
        .map((b) => b.role);
      if (kept.includes("llm_request") && kept.includes("llm_response")) t.llmReplayable++;
    } else if (path === "transcript") t.llmTranscript++;
  }
  if (kind === "policy_decision" && path === "hook" && p.mode === "enforce") t.enforcedHook++;
  if (kind === "telemetry_gap" && typeof p.cause === "string") t.reported.push({ seq, cause: p.cause });
  if (kind === "agent_stop") t.stop = { seq, crashed: p.outcome === "crashed" };
}

/** The tally of a chain's frames, given their kinds and parsed payloads (index = seq). */
export function tallyPayloads(kinds: readonly string[], payloads: readonly (ParsedPayload | null)[]): PayloadTally {
  const t = emptyTally();
  kinds.forEach((kind, seq) => {
    tallyFrame(t, seq, kind, payloads[seq] ?? null);
  });
  return t;
}

/** Merges tallies of consecutive slices, given in chain order. */
export function mergeTallies(tallies: readonly PayloadTally[]): PayloadTally {
  const t = emptyTally();
  const add = (into: Record<string, number>, from: Record<string, number>) => {
    for (const [k, n] of Object.entries(from)) into[k] = (into[k] ?? 0) + n;
  };
  for (const s of tallies) {
    t.frames += s.frames;
    add(t.byKind, s.byKind);
    add(t.byPath, s.byPath);
    t.llmGateway += s.llmGateway;
    t.llmTranscript += s.llmTranscript;
    t.llmReplayable += s.llmReplayable;
    t.enforcedHook += s.enforcedHook;
    t.backfilled += s.backfilled;
    t.reported.push(...s.reported);
    if (s.stop) t.stop = s.stop;
    for (const m of s.mentions) t.mentions.push(m);
  }
  return t;
}

/** What checking frames `from` … `to − 1` of a chain found. */
export interface FrameSlice {
  from: number;
  to: number;
  /** Frames that may not enter a chain (kind, payload form, size): position and why. */
  invalid: [number, string][];
  /** Frames whose recomputed hash is not the one they carry: position and the recomputed hash (hex). */
  mismatched: [number, string][];
  tally: PayloadTally;
}

/**
 * Checks frames `from` … `to − 1`: each frame's form, its hash recomputed as {@link hashFrames}
 * does (the claimed hash of the frame before links it), and its payload's tally. Pure, so any
 * thread may check any slice.
 */
export function checkFrameSlice(chainId: string, frames: readonly HashedFrame[], from: number, to: number): FrameSlice {
  const slice = checkPayloads(frames, from, to);
  visitFrameHashes(chainId, frames, from, to, (index, hash, matchesClaim) => {
    if (!matchesClaim && frames[index]!.hash !== undefined) slice.mismatched.push([index, bytesToHex(hash)]);
  });
  return slice;
}

function checkPayloads(frames: readonly Frame[], from: number, to: number): FrameSlice {
  const slice: FrameSlice = { from, to, invalid: [], mismatched: [], tally: emptyTally() };
  for (let index = from; index < to; index++) {
    const frame = frames[index]!;
    const { problem, payload } = checkFrame(frame);
    if (problem) slice.invalid.push([index, problem]);
    tallyFrame(slice.tally, index, frame.kind, payload);
  }
  return slice;
}

/** {@link checkFrameSlice} with the slice's recomputed hashes already known (index 0 = frame `from`). */
export function sliceWithHashes(frames: readonly HashedFrame[], from: number, to: number, hashes: readonly Uint8Array[]): FrameSlice {
  const slice = checkPayloads(frames, from, to);
  for (let index = from; index < to; index++) {
    const claimed = frames[index]!.hash;
    if (claimed !== undefined && !equalsHex(hashes[index - from]!, claimed))
      slice.mismatched.push([index, bytesToHex(hashes[index - from]!)]);
  }
  return slice;
}

/**
 * Puts slices of a chain of `count` frames in order and fills any range none of them covers with
 * `check`. Slices that overlap, or fall outside the chain, are not trusted: then every frame is
 * checked with `check`.
 */
export function completeSlices(
  slices: readonly FrameSlice[],
  count: number,
  check: (from: number, to: number) => FrameSlice,
): FrameSlice[] {
  const sorted = [...slices].sort((a, b) => a.from - b.from);
  const out: FrameSlice[] = [];
  let at = 0;
  for (const s of sorted) {
    if (!Number.isSafeInteger(s.from) || !Number.isSafeInteger(s.to) || s.from < at || s.to <= s.from || s.to > count)
      return [check(0, count)];
    if (s.from > at) out.push(check(at, s.from));
    out.push(s);
    at = s.to;
  }
  if (at < count || count === 0) out.push(check(at, count));
  return out;
}

/** One slice made of consecutive slices given in chain order. */
export function mergeSlices(slices: readonly FrameSlice[]): FrameSlice {
  return {
    from: slices[0]?.from ?? 0,
    to: slices.at(-1)?.to ?? 0,
    invalid: slices.flatMap((s) => s.invalid),
    mismatched: slices.flatMap((s) => s.mismatched),
    tally: mergeTallies(slices.map((s) => s.tally)),
  };
}
