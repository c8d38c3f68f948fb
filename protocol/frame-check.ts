/**
 * Checking a chain's frames a chunk at a time: each frame's form, its recomputed hash against the
 * one it carries, and what its payload adds to the coverage facts and the chain's own gaps. A
 * chunk can be checked on any thread; chunks taken in order give exactly what one pass over the
 * whole chain gives. No schemas here, so a thread that only checks frames loads no zod.
 * @module
 */
import { bytesToHex } from "./bytes.ts";
import { type Frame, type HashedFrame, visitFrameHashes } from "./frame-hash.ts";
import { readRecordJson } from "./json.ts";

/**
 * The largest frame payload, in UTF-16 code units (a JavaScript string's length), not bytes: a
 * payload at this limit is up to three times as many bytes of UTF-8.
 */
export const MAX_PAYLOAD_CHARS = 64 * 1024;

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
  return checkPayload(frame.kind, frame.payload);
}

/** {@link checkFrame} of a frame's kind and payload text. */
export function checkPayload(kind: string, text: string): { problem: string | null; payload: ParsedPayload | null } {
  if (text.length > MAX_PAYLOAD_CHARS) return { problem: `payload over ${MAX_PAYLOAD_CHARS} UTF-16 code units`, payload: null };
  const read = readRecordJson(text);
  if (read.problem !== null) return { problem: `payload ${read.problem}`, payload: null };
  const value = read.value;
  const payload = value !== null && typeof value === "object" && !Array.isArray(value) ? value : null;
  if (!payload) return { problem: "payload is not a JSON object", payload: null };
  if (!KINDS.has(kind)) return { problem: `unknown frame kind "${kind}"`, payload };
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

function mention(ref: Record<string, unknown>, seq: number): BodyMention {
  return {
    seq,
    role: String(ref.role),
    sha256: String(ref.sha256),
    size: Number(ref.size),
    kept: ref.kept === true,
    ...(typeof ref.why === "string" ? { why: ref.why } : {}),
  };
}

function mentionsOf(payload: ParsedPayload | null, seq: number, out: BodyMention[]): void {
  const bodies = payload?.bodies;
  if (!Array.isArray(bodies)) return;
  for (const b of bodies) if (b && typeof b === "object") out.push(mention(b as Record<string, unknown>, seq));
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
 * what the chain's own gaps are derived from (`gaps.ts`). Plain data, so it crosses threads; its
 * size grows with the kinds, paths and gaps the chain shows, never with its frames.
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
  /** Body references, repeats included, and those with `kept` other than true. */
  bodiesNamed: number;
  bodiesNotKept: number;
  /** Whether any body reference says `why: "digest_only"`. */
  digestOnly: boolean;
  /** The hashes of bodies not kept for being over the limit, each once, in order of appearance. */
  overLimit: string[];
  /** Each `telemetry_gap` frame with a string cause. */
  reported: { seq: number; cause: string }[];
  /** The last `agent_stop` with a readable payload, and whether it says the session crashed. */
  stop: { seq: number; crashed: boolean } | null;
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
    bodiesNamed: 0,
    bodiesNotKept: 0,
    digestOnly: false,
    overLimit: [],
    reported: [],
    stop: null,
  };
}

function addOverLimit(t: PayloadTally, sha256: string): void {
  // Few bodies are over 1 MiB, so a scan is cheaper than keeping a set beside the list.
  if (!t.overLimit.includes(sha256)) t.overLimit.push(sha256);
}

/**
 * Adds one frame (its kind and parsed payload, null when unreadable) to a tally. The kept bodies
 * it names are added to `kept` when given.
 */
export function tallyFrame(t: PayloadTally, seq: number, kind: string, p: ParsedPayload | null, kept?: BodyMention[]): void {
  t.frames++;
  t.byKind[kind] = (t.byKind[kind] ?? 0) + 1;
  if (!p) return;
  const path = String(p.path);
  t.byPath[path] = (t.byPath[path] ?? 0) + 1;
  if (p.backfilled === true) t.backfilled++;
  // The body references, read in place (a mention is made only for `kept`: this runs for every frame).
  let request = false;
  let response = false;
  const bodies = p.bodies;
  if (Array.isArray(bodies)) {
    for (const b of bodies) {
      if (!b || typeof b !== "object") continue;
      const ref = b as Record<string, unknown>;
      t.bodiesNamed++;
      if (ref.kept === true) {
        kept?.push(mention(ref, seq));
        const role = String(ref.role);
        if (role === "llm_request") request = true;
        else if (role === "llm_response") response = true;
      } else t.bodiesNotKept++;
      if (ref.why === "digest_only") t.digestOnly = true;
      else if (ref.why === "over_limit") addOverLimit(t, String(ref.sha256));
    }
  }
  if (kind === "llm_call") {
    if (path === "gateway") {
      t.llmGateway++;
      if (request && response) t.llmReplayable++;
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

/** Adds the tally of the frames that come next in the chain to `into`. */
export function addTally(into: PayloadTally, next: PayloadTally): void {
  const add = (to: Record<string, number>, from: Record<string, number>) => {
    for (const [k, n] of Object.entries(from)) to[k] = (to[k] ?? 0) + n;
  };
  into.frames += next.frames;
  add(into.byKind, next.byKind);
  add(into.byPath, next.byPath);
  into.llmGateway += next.llmGateway;
  into.llmTranscript += next.llmTranscript;
  into.llmReplayable += next.llmReplayable;
  into.enforcedHook += next.enforcedHook;
  into.backfilled += next.backfilled;
  into.bodiesNamed += next.bodiesNamed;
  into.bodiesNotKept += next.bodiesNotKept;
  into.digestOnly ||= next.digestOnly;
  for (const sha of next.overLimit) addOverLimit(into, sha);
  for (const r of next.reported) into.reported.push(r);
  if (next.stop) into.stop = next.stop;
}

/**
 * What checking frames `from` … `to − 1` found. Chunks of one chain, taken in order, give the
 * chain's problems ({@link FrameProblems}) and its tally ({@link addTally}).
 */
export interface FrameChunk {
  from: number;
  to: number;
  /** Each frame's seq and time, by position from `from`. */
  seqs: Float64Array;
  times: Float64Array;
  /** Frames that may not enter a chain (kind, payload form, size): position and why. */
  invalid: [number, string][];
  /** Frames whose recomputed hash is not the one they carry: position and the recomputed hash (hex). */
  mismatched: [number, string][];
  tally: PayloadTally;
  /** The kept bodies the frames name, in order, when they were asked for. */
  kept: BodyMention[];
  /**
   * The position where the input stops being frames in the bundle's layout (then `to` is that
   * position), why, and whether it is because the bytes are not UTF-8.
   */
  malformed: { index: number; message: string; unreadable: boolean } | null;
}

/** A chunk of no frames yet, starting at `from`; `size` is how many frames it may hold. */
export function emptyChunk(from: number, size: number): FrameChunk {
  return {
    from,
    to: from,
    seqs: new Float64Array(size),
    times: new Float64Array(size),
    invalid: [],
    mismatched: [],
    tally: emptyTally(),
    kept: [],
    malformed: null,
  };
}

/**
 * Checks frames `from` … `to − 1` of a chain held as objects: each frame's form, its hash
 * recomputed with `prev` = the hash the frame before it carries, and its payload's tally. Pure, so
 * any thread may check any chunk.
 */
export function checkFrames(chainId: string, frames: readonly HashedFrame[], from: number, to: number, bodies = false): FrameChunk {
  const chunk = emptyChunk(from, to - from);
  for (let index = from; index < to; index++) {
    const frame = frames[index]!;
    const { problem, payload } = checkFrame(frame);
    if (problem) chunk.invalid.push([index, problem]);
    chunk.seqs[index - from] = frame.seq;
    chunk.times[index - from] = frame.t;
    tallyFrame(chunk.tally, index, frame.kind, payload, bodies ? chunk.kept : undefined);
  }
  visitFrameHashes(chainId, frames, from, to, (index, hash, matchesClaim) => {
    if (!matchesClaim && frames[index]!.hash !== undefined) chunk.mismatched.push([index, bytesToHex(hash)]);
  });
  chunk.to = to;
  return chunk;
}

/** One problem of a chain's frames. */
export interface ChainProblem {
  seq: number;
  code: "SEQ_GAP" | "SEQ_DUPLICATE" | "SEQ_ORDER" | "FRAME_INVALID" | "FRAME_HASH_MISMATCH" | "TIME_REGRESSION";
  message: string;
}

/**
 * The problems of a chain that starts at seq 0, from the chunks that checked its frames, given in
 * order: seq continuity, frames that may not enter a chain, time going backwards (reported, not a
 * break: clocks move), and recomputed hashes that differ from the ones the frames carry. One
 * frame's problems come in that order.
 */
export class FrameProblems {
  #prevSeq: number | null = null;
  #lastT = 0;
  #next = 0;

  /** The problems of the next chunk's frames; throws when it is not the next one. */
  add(chunk: FrameChunk): ChainProblem[] {
    if (chunk.from !== this.#next) throw new Error(`expected the chunk from frame ${this.#next}, got ${chunk.from}`);
    this.#next = chunk.to;
    const problems: ChainProblem[] = [];
    const invalid = new Map(chunk.invalid);
    const mismatched = new Set(chunk.mismatched.map(([index]) => index));
    for (let index = chunk.from; index < chunk.to; index++) {
      const seq = chunk.seqs[index - chunk.from]!;
      const t = chunk.times[index - chunk.from]!;
      if (seq !== index) {
        const code = seq < index ? (this.#prevSeq === seq ? "SEQ_DUPLICATE" : "SEQ_ORDER") : "SEQ_GAP";
        problems.push({ seq: index, code, message: `frame at position ${index} has seq ${seq}` });
      }
      const problem = invalid.get(index);
      if (problem) problems.push({ seq: index, code: "FRAME_INVALID", message: problem });
      if (t < this.#lastT) problems.push({ seq: index, code: "TIME_REGRESSION", message: `time goes back ${this.#lastT - t} ms` });
      this.#lastT = Math.max(this.#lastT, t);
      if (mismatched.has(index)) {
        problems.push({ seq: index, code: "FRAME_HASH_MISMATCH", message: "content does not match the frame's recorded hash" });
      }
      this.#prevSeq = seq;
    }
    return problems;
  }
}
