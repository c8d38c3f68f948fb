/**
 * What verifying a bundle reports: findings, their severities and the exit code they add up to,
 * and how a phase keeps them. Apart from `verify-check.ts`, which runs the phases.
 * @module
 */
import type { CoverageFacts } from "./assess.ts";
import type { LockSummary } from "./lock-check.ts";
import type { PinnedKey } from "./server-keys.ts";

/** How bad a finding is: `tamper` → exit 1, `unverifiable` → exit 2, `incomplete` → exit 3, `note` → no effect. */
export type Severity = "tamper" | "unverifiable" | "incomplete" | "note";

/** One problem (or note) found in a bundle. */
export interface Finding {
  code: string;
  severity: Severity;
  /** Where: `bundle`, `manifest`, `line 3`, `frame 12`, `lock 3`, `gap list`, `body <sha256>`. */
  where: string;
  message: string;
}

/** Exit codes of `oxagen verify`. */
export const EXIT = { valid: 0, tampered: 1, unverifiable: 2, incomplete: 3 } as const;

/** What verification is given besides the bundle. */
export interface VerifyOptions {
  /**
   * The pinned server keys: one public key (32 bytes, any use, any time), or a set with the uses
   * and periods each may sign in (see `server-keys.ts`). A signature is checked with the pinned
   * key its key id names.
   */
  serverKey: Uint8Array | readonly PinnedKey[];
  /** Hex hash the last frame must have (anti-truncation, from an earlier look at the run). */
  expectHead?: string;
  /** Looks up a body by SHA-256: its bytes, or null when the caller has none. */
  body?: (sha256: string) => Uint8Array | null;
  /** Called now and then with the fraction done (of the bytes) and, for a version-2 bundle, the frames read so far: for a progress bar. */
  onProgress?: (done: number, frames?: number) => void;
}

/** The result of verifying a bundle. */
export interface VerifyResult {
  exit: 0 | 1 | 2 | 3;
  findings: Finding[];
  /** The first seq whose frame, link or lock does not hold, or null. */
  firstBrokenSeq: number | null;
  summary: {
    run: string | null;
    frames: number;
    locks: number;
    lockedFrames: number;
    finalLocked: boolean;
    gaps: number;
    head: string | null;
    tier: string | null;
    grade: string | null;
    /** Body files read and hashed (a body named by several frames is read once, as far as memory allows). */
    bodiesChecked: number;
    /** The run's harness label, as the manifest names it. */
    harness: string | null;
    /** The coverage facts counted from the bundle's own frames (not the bundle's claim). */
    coverage: CoverageFacts | null;
    /** How many gaps of each kind the bundle lists. */
    gapCounts: Record<string, number>;
  };
}

/** The exit code a list of findings adds up to: tampered wins over cannot-verify, which wins over incomplete. */
export function exitFor(findings: readonly Finding[]): 0 | 1 | 2 | 3 {
  if (findings.some((f) => f.severity === "tamper")) return EXIT.tampered;
  if (findings.some((f) => f.severity === "unverifiable")) return EXIT.unverifiable;
  if (findings.some((f) => f.severity === "incomplete")) return EXIT.incomplete;
  return EXIT.valid;
}

/** The summary of a bundle nothing has been read of yet. */
export const emptySummary = (): VerifyResult["summary"] => ({
  run: null,
  frames: 0,
  locks: 0,
  lockedFrames: 0,
  finalLocked: false,
  gaps: 0,
  head: null,
  tier: null,
  grade: null,
  bodiesChecked: 0,
  harness: null,
  coverage: null,
  gapCounts: {},
});

/** One finding. */
export const finding = (code: string, severity: Severity, where: string, message: string): Finding => ({ code, severity, where, message });

/** The most findings of one code a phase keeps: a bundle whose every frame is broken does not fill memory. */
export const MAX_FINDINGS_PER_CODE = 10_000;

/**
 * A phase's findings, at most {@link MAX_FINDINGS_PER_CODE} of each code; the rest are counted,
 * and one note says how many of a code are not listed.
 */
export class FindingList {
  readonly #items: Finding[] = [];
  readonly #counts = new Map<string, number>();

  push(f: Finding): void {
    const n = (this.#counts.get(f.code) ?? 0) + 1;
    this.#counts.set(f.code, n);
    if (n <= MAX_FINDINGS_PER_CODE) this.#items.push(f);
  }

  list(): Finding[] {
    const omitted = [...this.#counts].filter(([, n]) => n > MAX_FINDINGS_PER_CODE);
    return [
      ...this.#items,
      ...omitted.map(([code, n]) =>
        finding(
          "FINDINGS_OMITTED",
          "note",
          "bundle",
          `${n - MAX_FINDINGS_PER_CODE} more ${code} findings are not listed (the first ${MAX_FINDINGS_PER_CODE} are).`,
        ),
      ),
    ];
  }
}

/**
 * The findings of a bundle's locks, from protocol's lock check ({@link LockSummary}) of a chain of
 * `n` frames: each problem at its lock (a time going back a note, a seal's unusable key
 * unverifiable), frames after the final lock at its count, then what leaves the record incomplete.
 * `broke` is told each seq a finding breaks the chain at.
 */
export function lockFindings(locks: LockSummary, n: number, broke: (seq: number) => void): Finding[] {
  const out: Finding[] = [];
  let framesAfterFinal: number | null = null;
  for (const p of locks.problems) {
    if (p.code === "FRAMES_AFTER_FINAL") {
      // The first final lock: the one the problem is about.
      framesAfterFinal = locks.parsed.find((l) => l?.final)?.count ?? null;
      continue;
    }
    if (p.code === "LOCK_TIME_REGRESSION") {
      out.push(finding(p.code, "note", `lock ${p.lockSeq}`, sentence(p.message)));
      continue;
    }
    if (p.code === "SERVER_KEY_UNKNOWN" || p.code === "SERVER_KEY_NOT_VALID") {
      out.push(finding(p.code, "unverifiable", `lock ${p.lockSeq}`, p.message));
      continue;
    }
    const lock = locks.parsed[p.lockSeq];
    if (p.code === "LOCK_HEAD_MISMATCH" && lock) broke(Math.max(0, Math.min(lock.count, n) - 1));
    out.push(finding(p.code, "tamper", `lock ${p.lockSeq}`, sentence(p.message)));
  }
  if (framesAfterFinal !== null) {
    broke(framesAfterFinal);
    out.push(
      finding(
        "FRAMES_AFTER_FINAL",
        "tamper",
        `frame ${framesAfterFinal}`,
        `The chain holds ${n - framesAfterFinal} frames after its final lock.`,
      ),
    );
  }
  if (!locks.finalLocked && !locks.parsed.at(-1)?.final) {
    out.push(
      finding("NOT_FINAL_LOCKED", "incomplete", "locks", "The run's record has no final lock, so a cut-off tail cannot be ruled out."),
    );
  }
  if (locks.lockedCount < n) {
    out.push(
      finding(
        "UNLOCKED_TAIL",
        "incomplete",
        `frame ${locks.lockedCount}`,
        `Frames ${locks.lockedCount} to ${n - 1} come after the last lock; only the server vouches for them.`,
      ),
    );
  }
  return out;
}

/** A message as a sentence: capitalized, ending with a full stop. */
export function sentence(text: string): string {
  const t = text.charAt(0).toUpperCase() + text.slice(1);
  return t.endsWith(".") ? t : `${t}.`;
}
