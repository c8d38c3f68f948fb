/**
 * Reading a version-2 bundle (JSON lines, see `bundle-stream.ts`) into a {@link BundleCheck} in
 * one pass, a block at a time: memory holds a few blocks, the locks and the gaps, never the
 * frames. Frame lines are checked a block at a time by a {@link FrameChecker}, on this thread or
 * shared with another; the bundle's running hash is computed here as the blocks are read.
 * @module
 */
import { bundleSignatureValid, bundleV2SigningInput, inExportedForm, SIGNATURE_LINE_RE } from "./bundle-layout.ts";
import { EndLine, HeadLine, LINES, type LineKind, lineKind, MAX_LINE_BYTES } from "./bundle-stream.ts";
import { fromHex, fromUtf8 } from "./bytes.ts";
import type { FrameChunk } from "./frame-check.ts";
import { genesisHash } from "./frame-hash.ts";
import { checkFrameLines, claimedHash, type FrameLinesJob } from "./frame-lines.ts";
import { sha256Stream } from "./hash.ts";
import { lockSignatureValid } from "./lock-signature.ts";
import type { BundleCheck, LockSignatureJob } from "./verify-check.ts";

/** A bundle file read by position. */
export interface BundleSource {
  readonly size: number;
  /** Reads up to `length` bytes at file offset `position` into `into` at `at`; returns how many (0 at the end). */
  read(into: Uint8Array, at: number, length: number, position: number): number;
}

/** A bundle in memory as a {@link BundleSource}. */
export function bytesSource(bytes: Uint8Array): BundleSource {
  return {
    size: bytes.length,
    read: (into, at, length, position) => {
      const n = Math.max(0, Math.min(length, bytes.length - position));
      into.set(bytes.subarray(position, position + n), at);
      return n;
    },
  };
}

/**
 * Where frame lines are checked. Blocks are read into its slots in turn; a slot is refilled only
 * after {@link FrameChecker.free}; checked chunks come back in the order they were submitted.
 */
export interface FrameChecker {
  readonly slots: readonly Uint8Array[];
  /** Called when a version-2 bundle starts being read (a checker with a thread to start starts it now). */
  start?(): void;
  /** Checks the frame lines `slots[slot][start … end)` (each ending with LF), from frame `job.from`. */
  submit(slot: number, start: number, end: number, job: FrameLinesJob): void;
  /** Returns once nothing reads slot `slot` any more (checking its pending lines here if need be). */
  free(slot: number): void;
  /** The next checked chunk in submission order, or null when none is ready (or, with `wait`, none is left). */
  next(wait: boolean): FrameChunk | null;
  /** Starts checking lock signatures, elsewhere if it can. */
  lockSignatures(jobs: readonly LockSignatureJob[]): void;
  /** The lock signatures' answers, in order, or null to have them checked by the caller. */
  lockSignatureAnswers(): boolean[] | null;
}

/** Bytes per slot: room for a block and a line carried over from the block before. */
export const SLOT_BYTES = 2 * MAX_LINE_BYTES;

/**
 * A {@link FrameChecker} that checks everything on this thread, at once; its one slot holds
 * `bytes` (a bundle smaller than a slot needs no more), made by `alloc` (a Node process gives a
 * Buffer, whose native `indexOf` finds line ends many times faster).
 */
export function localChecker(bytes = SLOT_BYTES, alloc: (size: number) => Uint8Array = (size) => new Uint8Array(size)): FrameChecker {
  const done: FrameChunk[] = [];
  return {
    slots: [alloc(Math.min(bytes, SLOT_BYTES))],
    submit(slot, start, end, job) {
      done.push(checkFrameLines(this.slots[slot]!, start, end, job));
    },
    free: () => {},
    next: () => done.shift() ?? null,
    lockSignatures: () => {},
    lockSignatureAnswers: () => null,
  };
}

/** Checks lock signatures as {@link FrameChecker.lockSignatures} is asked to. */
export function checkLockSignatures(jobs: readonly LockSignatureJob[]): boolean[] {
  return jobs.map((j) => j.key !== null && lockSignatureValid(j, j.key));
}

const LF = 0x0a;
const TAIL_BYTES = 512;
// The sections of a bundle, in order; a line may not go back to an earlier one.
const HEAD = 0;
const LOCKS = 1;
const FRAMES = 2;
const EQUIVOCATIONS = 3;
const GAPS = 4;
const ENDED = 5;
const SECTION: Record<Exclude<LineKind, "signature" | "frame" | "gap_bodies">, number> = {
  head: HEAD,
  lock: LOCKS,
  equivocation: EQUIVOCATIONS,
  gap: GAPS,
  end: ENDED,
};

// Whether a parsed gap line's gap names bodies (so gap_bodies lines may go on with them).
function hasBodies(value: unknown): boolean {
  const gap = (value as { gap?: { bodies?: unknown } } | null)?.gap;
  return Array.isArray(gap?.bodies) && gap.bodies.length > 0;
}

/** What {@link readV2} reports besides the findings. */
export interface ReadOptions {
  bodies: boolean;
  onProgress?: (done: number, frames?: number) => void;
}

/** Feeds a version-2 bundle, read from `source`, to `check`; frame lines are checked by `checker`. */
export function readV2(source: BundleSource, check: BundleCheck, checker: FrameChecker, options: ReadOptions): void {
  const signature = readSignature(source);
  if (!signature) {
    check.unreadable("BUNDLE_LAYOUT", "The file does not end with a bundle signature line.");
    return;
  }
  checker.start?.();
  const digest: { value: Uint8Array | null } = { value: null };
  check.signature(signature.keyId, (key) => !!digest.value && bundleSignatureValid(bundleV2SigningInput(digest.value), signature.sig, key));
  new Reader(source, check, checker, options, signature.start, digest).run();
}

// The signature line at the end of the file: its key id, its signature and where it starts.
function readSignature(source: BundleSource): { keyId: string; sig: string; start: number } | null {
  const size = source.size;
  const tail = new Uint8Array(Math.min(size, TAIL_BYTES));
  const got = source.read(tail, 0, tail.length, size - tail.length);
  const end = tail[got - 1] === LF ? got - 1 : got;
  const lf = tail.lastIndexOf(LF, end - 1);
  if (got !== tail.length || lf < 0) return null;
  const match = SIGNATURE_LINE_RE.exec(String.fromCharCode(...tail.subarray(lf + 1, got)));
  return match ? { keyId: match[1]!, sig: match[2]!, start: size - tail.length + lf + 1 } : null;
}

class Reader {
  readonly #hash = sha256Stream();
  #section = HEAD;
  // Whether the line before was a gap with bodies (or more of them): the only place gap_bodies may go.
  #gapBodiesMayFollow = false;
  #line = 0;
  #frame = 0;
  #heads: number[] = [];
  #headAt = 0;
  #prev: Uint8Array = new Uint8Array(32);
  #chainId = "";
  #run: { start: number; end: number; from: number; last: [number, number] } | null = null;
  #submitted = 0;
  #received = 0;

  readonly source: BundleSource;
  readonly check: BundleCheck;
  readonly checker: FrameChecker;
  readonly options: ReadOptions;
  readonly sigStart: number;
  readonly digest: { value: Uint8Array | null };

  constructor(
    source: BundleSource,
    check: BundleCheck,
    checker: FrameChecker,
    options: ReadOptions,
    sigStart: number,
    digest: { value: Uint8Array | null },
  ) {
    this.source = source;
    this.check = check;
    this.checker = checker;
    this.options = options;
    this.sigStart = sigStart;
    this.digest = digest;
  }

  run(): void {
    const { source, check, checker, sigStart } = this;
    const slots = checker.slots;
    let position = 0;
    let k = 0;
    let carry: Uint8Array = new Uint8Array(0);
    while (position < sigStart) {
      checker.free(k);
      const slot = slots[k]!;
      slot.set(carry, 0);
      const want = Math.min(slot.length - carry.length, sigStart - position);
      if (want === 0) {
        check.unreadable("BUNDLE_LAYOUT", "A line of the bundle is longer than 1 MiB.");
        return;
      }
      let n = 0;
      while (n < want) {
        const got = source.read(slot, carry.length + n, want - n, position + n);
        if (got === 0) break;
        n += got;
      }
      if (n < want) {
        check.unreadable("UNREADABLE", "The bundle ended (or changed) while it was read.");
        return;
      }
      this.#hash.update(slot.subarray(carry.length, carry.length + n));
      position += n;
      const filled = carry.length + n;
      let at = 0;
      if (!check.voided) {
        for (let lf = slot.indexOf(LF, at); lf >= 0 && lf < filled && !check.voided; lf = slot.indexOf(LF, at)) {
          if (lf - at > MAX_LINE_BYTES) {
            check.unreadable("BUNDLE_LAYOUT", "A line of the bundle is longer than 1 MiB.");
            return;
          }
          this.#lineAt(k, slot, at, lf);
          at = lf + 1;
        }
        this.#submitRun(k);
      } else at = filled;
      if (check.stopped) return;
      if (filled - at > MAX_LINE_BYTES) {
        check.unreadable("BUNDLE_LAYOUT", "A line of the bundle is longer than 1 MiB.");
        return;
      }
      // The start of a line that goes on in the next block; copied out before that slot is refilled.
      carry = Uint8Array.prototype.slice.call(slot, at, filled);
      this.#collect(false);
      k = (k + 1) % slots.length;
      this.options.onProgress?.(position / sigStart, this.#frame);
    }
    if (carry.length > 0 && !check.voided) check.invalid(`line ${this.#line + 1}`, "The line before the signature does not end with LF.");
    this.#collect(true);
    this.digest.value = this.#hash.digest();
    if (check.voided) return;
    if (this.#section < ENDED) check.invalid("manifest", "The bundle has no end line.");
    check.lockSignatures(checker.lockSignatureAnswers());
  }

  #lineAt(slotIndex: number, slot: Uint8Array, start: number, end: number): void {
    this.#line++;
    const kind = lineKind(slot, start);
    if (kind === "frame") {
      this.#frameLine(slot, start, end);
      return;
    }
    this.#submitRun(slotIndex);
    const where = `line ${this.#line}`;
    if (kind === null || kind === "signature") {
      this.check.invalid(where, `Line ${this.#line} is not a line of a bundle.`);
      return;
    }
    const section = kind === "gap_bodies" ? GAPS : SECTION[kind];
    const outOfOrder =
      section < this.#section ||
      (kind === "head") !== (this.#section === HEAD) ||
      (kind === "gap_bodies" && !this.#gapBodiesMayFollow) ||
      (kind === "end" && this.#section === ENDED);
    if (outOfOrder) {
      this.check.invalid(where, `Line ${this.#line} (${kind}) is out of the bundle's order.`);
      return;
    }
    if (section > LOCKS) this.#leaveLocks();
    if (section > FRAMES) this.#collect(true);
    // After the head come the locks, even when there are none.
    this.#section = kind === "head" ? LOCKS : section;
    this.#gapBodiesMayFollow = false;
    let value: unknown;
    try {
      const text = fromUtf8(slot.subarray(start, end));
      value = JSON.parse(text);
      if (!inExportedForm(value, text)) throw new SyntaxError("not in its exported form");
    } catch (err) {
      if (err instanceof TypeError) {
        this.check.unreadable("UNREADABLE", "The bundle is not valid UTF-8.");
        return;
      }
      this.check.invalid(where, `Line ${this.#line} is not JSON in its exported form (white space, duplicate member or escaping).`);
      return;
    }
    this.#gapBodiesMayFollow = kind === "gap_bodies" || (kind === "gap" && hasBodies(value));
    this.#record(kind, value, where);
  }

  #record(kind: Exclude<LineKind, "frame" | "signature">, value: unknown, where: string): void {
    const check = this.check;
    const schema = kind === "head" ? HeadLine : kind === "end" ? EndLine : LINES[kind];
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const why = issue ? `${issue.path.join(".")}: ${issue.message}` : "invalid";
      check.invalid(where, `Line ${this.#line} (${kind}) does not have the bundle's shape (${why}).`);
      return;
    }
    const data = parsed.data as Record<string, unknown>;
    switch (kind) {
      case "head": {
        const head = parsed.data as ReturnType<typeof HeadLine.parse>;
        check.head(head);
        this.#chainId = head.run.id;
        this.#prev = genesisHash(head.run.id);
        return;
      }
      case "lock":
        check.lock(data.lock as ReturnType<typeof LINES.lock.parse>["lock"]);
        return;
      case "equivocation":
        check.equivocation(data.equivocation as ReturnType<typeof LINES.equivocation.parse>["equivocation"]);
        return;
      case "gap":
        check.gap(data.gap as ReturnType<typeof LINES.gap.parse>["gap"]);
        return;
      case "gap_bodies":
        check.gapBodies(data.gap_bodies as string[]);
        return;
      case "end":
        check.end((parsed.data as ReturnType<typeof EndLine.parse>).end);
        return;
    }
  }

  #frameLine(slot: Uint8Array, start: number, end: number): void {
    if (this.#section > FRAMES) {
      this.check.invalid(`frame ${this.#frame}`, `Line ${this.#line} is a frame out of the bundle's order.`);
      return;
    }
    this.#leaveLocks();
    this.#section = FRAMES;
    this.#run ??= { start, end, from: this.#frame, last: [start, end] };
    this.#run.end = end + 1;
    this.#run.last = [start, end];
    while (this.#heads[this.#headAt] === this.#frame) {
      const hash = claimedHash(slot, start, end);
      if (hash) this.check.claimed(this.#frame, hash);
      this.#headAt++;
    }
    this.#frame++;
  }

  // Hands the frame lines gathered in this block to the checker.
  #submitRun(slotIndex: number): void {
    const run = this.#run;
    this.#run = null;
    if (!run || this.check.voided) return;
    const slot = this.checker.slots[slotIndex]!;
    this.checker.submit(slotIndex, run.start, run.end, {
      chainId: this.#chainId,
      from: run.from,
      prev: this.#prev.slice(),
      bodies: this.options.bodies,
    });
    this.#submitted++;
    const last = claimedHash(slot, run.last[0], run.last[1]);
    if (last) this.check.claimed(this.#frame - 1, last);
    this.#prev = last ? fromHex(last, 32) : new Uint8Array(32);
  }

  #leaveLocks(): void {
    if (this.#section !== LOCKS) return;
    const { heads, signatures } = this.check.locksDone();
    this.#heads = heads;
    this.checker.lockSignatures(signatures);
  }

  // Takes checked chunks as they are ready (all of them with `wait`) and gives them to the check in order.
  #collect(wait: boolean): void {
    while (this.#received < this.#submitted) {
      const chunk = this.checker.next(wait);
      if (!chunk) return;
      this.#received++;
      if (this.check.voided) continue;
      if (chunk.malformed?.unreadable) this.check.unreadable("UNREADABLE", "The bundle is not valid UTF-8.");
      else if (chunk.malformed) {
        const { index, message } = chunk.malformed;
        this.check.invalid(`frame ${index}`, `The frame at position ${index} is malformed: ${message}.`);
      } else this.check.frames(chunk);
    }
  }
}
