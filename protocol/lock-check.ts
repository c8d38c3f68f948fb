/**
 * Lock acceptance: the one rule for whether a lock may follow the locks before it on a chain.
 * {@link lockProblems} checks one lock against where the chain's locks stand; the server's lock
 * intake (`workers/chain/locks.ts`) stores a lock only when it finds no problem (a time going back
 * aside: that is a note), and {@link verifyLocks} walks a bundle's locks with it and reports
 * every problem of every lock.
 * @module
 */
import { bytesToHex } from "./bytes.ts";
import { type LockPayload, lockHash, parseLock, type SignedLock } from "./lock.ts";
import { lockSignatureValid } from "./lock-signature.ts";
import type { KeyRefusal } from "./server-keys.ts";

/** One problem of a lock. */
export interface LockProblem {
  lockSeq: number;
  code:
    | "LOCK_FORMAT_INVALID"
    | "LOCK_CHAIN_MISMATCH"
    | "LOCK_HOST_MISMATCH"
    | "LOCK_SIG_INVALID"
    | "LOCK_SEQ_GAP"
    | "LOCK_SEQ_DUPLICATE"
    | "LOCK_CHAIN_BREAK"
    | "LOCK_REGRESSION"
    | "LOCK_HEAD_MISMATCH"
    | "LOCK_AFTER_FINAL"
    | "LOCK_TIME_REGRESSION"
    | "FRAMES_AFTER_FINAL"
    | KeyRefusal["code"];
  message: string;
  /** On a `LOCK_HEAD_MISMATCH`: the lock covers more frames than the chain holds (rather than naming another head). */
  beyond?: true;
}

/** Where a chain's locks stand: what the next lock has to follow. */
export interface LockCursor {
  /** The lock_seq the next lock must have. */
  nextSeq: number;
  /** The hash of the last lock, which the next one names in `prev_lock` (null before the first). */
  prevHash: string | null;
  /** Frames covered by the last lock: a lock's count never goes back. */
  count: number;
  /** The last lock's time, when known: a lock's time going back is a note, never a refusal. */
  t: number | null;
  /** A final lock is taken: nothing may follow it. */
  final: boolean;
}

/** Where a chain with no lock stands. */
export const NO_LOCK: LockCursor = { nextSeq: 0, prevHash: null, count: 0, t: null, final: false };

/** What a lock is checked against: its chain, the frames it may cover and the keys that may sign it. */
export interface LockChain {
  chainId: string;
  /** When given, every lock must name this host. */
  hostId?: string;
  /** How many frames the chain holds. */
  frameCount: number;
  /** The hash (hex) of the frame at a position below `frameCount`. */
  frameHash: (index: number) => string;
  /** The chain's genesis hash (the head of a lock with count 0). */
  genesis: Uint8Array;
  /** The key a host lock is checked with. */
  hostKey: Uint8Array;
  /**
   * The key a server-signed lock (a seal) is checked with, and why it may not sign it, if so (see
   * `server-keys.ts` pickKey). Absent where only the host's own locks are taken (the server's intake).
   */
  serverKey?: (lock: LockPayload) => { key: Uint8Array | null; refusal: KeyRefusal | null };
}

/**
 * Every problem of one lock (parsed as `p`) taken after `cursor`, in a fixed order: chain id,
 * host, the server key's refusal, signature (host locks with the host key, a seal with the server
 * key), lock_seq contiguity, the `prev_lock` link, nothing after a final lock, the count never
 * going back, the time going back (a note), the head equal to the frame at its count, and a final
 * lock covering every frame. `signatureValid`, when given, is the signature's check done elsewhere
 * (another thread) under the key of the signer the payload names.
 */
export function lockProblems(
  lock: SignedLock,
  p: LockPayload,
  cursor: LockCursor,
  chain: LockChain,
  signatureValid?: boolean,
): LockProblem[] {
  const problems: LockProblem[] = [];
  const at = p.lock_seq;
  const problem = (code: LockProblem["code"], message: string) => problems.push({ lockSeq: at, code, message });
  if (p.chain !== chain.chainId) problem("LOCK_CHAIN_MISMATCH", `lock names chain ${p.chain}, not ${chain.chainId}`);
  if (chain.hostId !== undefined && p.host !== chain.hostId)
    problem("LOCK_HOST_MISMATCH", `lock names host ${p.host}, not ${chain.hostId}`);
  let key: Uint8Array | null = chain.hostKey;
  if (p.signer === "server") {
    const server = chain.serverKey?.(p) ?? null;
    if (!server) problem("LOCK_HOST_MISMATCH", "lock is signed by the server; only the host's own locks are taken here");
    else if (server.refusal) problem(server.refusal.code, server.refusal.message);
    key = server?.key ?? null;
  }
  if (key && !(signatureValid ?? lockSignatureValid(lock, key)))
    problem("LOCK_SIG_INVALID", `signature does not verify under the ${p.signer} key`);
  if (at !== cursor.nextSeq)
    problem(at < cursor.nextSeq ? "LOCK_SEQ_DUPLICATE" : "LOCK_SEQ_GAP", `expected lock_seq ${cursor.nextSeq}, found ${at}`);
  if (p.prev_lock !== cursor.prevHash) problem("LOCK_CHAIN_BREAK", "prev_lock does not name the lock before it");
  if (cursor.final) problem("LOCK_AFTER_FINAL", "a lock follows a final lock");
  if (p.count < cursor.count) problem("LOCK_REGRESSION", `count ${p.count} is below the previous lock's ${cursor.count}`);
  if (cursor.t !== null && p.t < cursor.t) problem("LOCK_TIME_REGRESSION", `time goes back ${cursor.t - p.t} ms`);
  if (p.count > chain.frameCount) {
    problems.push({
      lockSeq: at,
      code: "LOCK_HEAD_MISMATCH",
      message: `lock covers ${p.count} frames but the chain holds ${chain.frameCount}`,
      beyond: true,
    });
  } else if ((p.count === 0 ? bytesToHex(chain.genesis) : chain.frameHash(p.count - 1)) !== p.head) {
    problem("LOCK_HEAD_MISMATCH", `head does not match frame ${p.count - 1}`);
  }
  if (p.final && !cursor.final && p.count < chain.frameCount)
    problem("FRAMES_AFTER_FINAL", `the chain holds ${chain.frameCount - p.count} frames after its final lock`);
  return problems;
}

/**
 * Where the locks stand once `lock` is taken. A lock that had problems moves the cursor too (so
 * one bad lock is one finding, not one for every lock after it); for a lock without problems this
 * is exactly that lock's seq, hash, count, time and finality.
 */
export function advanceLocks(cursor: LockCursor, lock: SignedLock, p: LockPayload): LockCursor {
  return {
    nextSeq: Math.max(cursor.nextSeq, p.lock_seq + 1),
    prevHash: lockHash(lock),
    count: Math.max(cursor.count, p.count),
    t: Math.max(cursor.t ?? 0, p.t),
    final: cursor.final || p.final,
  };
}

/** What {@link verifyLocks} needs besides the chain: work done elsewhere, by position. */
export interface LockContext extends LockChain {
  /** Each lock's signature check under its signer's key, when computed elsewhere (e.g. another thread); missing entries are computed here. */
  signatures?: readonly boolean[];
  /** Each lock's payload as {@link parseLock} gives it (null where it throws), when parsed already. */
  parsed?: readonly (LockPayload | null)[];
}

/** Summary of a run of locks. */
export interface LockSummary {
  problems: LockProblem[];
  /** Frames covered by the last valid lock. */
  lockedCount: number;
  /** True when the last lock is final and covers every frame. */
  finalLocked: boolean;
  parsed: (LockPayload | null)[];
}

/** Checks a bundle's locks in the order it holds them with {@link lockProblems}, going on after each problem. */
export function verifyLocks(locks: readonly SignedLock[], ctx: LockContext): LockSummary {
  const problems: LockProblem[] = [];
  const parsed: (LockPayload | null)[] = [];
  let cursor = NO_LOCK;
  locks.forEach((lock, index) => {
    let p: LockPayload;
    try {
      // A payload parsed already is taken as it is; one that did not parse is parsed again for its reason.
      p = ctx.parsed?.[index] ?? parseLock(lock);
    } catch (err) {
      problems.push({
        lockSeq: index,
        code: "LOCK_FORMAT_INVALID",
        message: `lock at position ${index} is not a valid lock: ${short(err)}`,
      });
      parsed.push(null);
      cursor = { ...cursor, prevHash: safeLockHash(lock), nextSeq: index + 1 };
      return;
    }
    parsed.push(p);
    problems.push(...lockProblems(lock, p, cursor, ctx, ctx.signatures?.[index]));
    cursor = advanceLocks(cursor, lock, p);
  });
  const last = parsed.at(-1);
  return { problems, lockedCount: cursor.count, finalLocked: !!last && last.final && last.count === ctx.frameCount, parsed };
}

function safeLockHash(lock: SignedLock): string | null {
  try {
    return lockHash(lock);
  } catch {
    return null;
  }
}

function short(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
