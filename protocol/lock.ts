/**
 * Locks: signed chain heads.
 *
 * A lock's payload is Record JSON (see `json.ts`) with exactly the fields of {@link LockPayload}.
 * Its signature is Ed25519 over the DSSE pre-authentication encoding
 * `PAE(type, payload) = "DSSEv1" SP len(type) SP type SP len(payload) SP payload` with
 * type {@link LOCK_PAYLOAD_TYPE} and lengths in ASCII decimal. A lock's own hash, which the next
 * lock names in `prev_lock`, is SHA-256 of those PAE bytes (no domain tag: PAE is one already).
 * @module
 */
import { z } from "zod";
import { bytesToHex, utf8 } from "./bytes.ts";
import { sha256 } from "./hash.ts";
import { publicKeyOf, sign } from "./ed25519.ts";
import { ChainId, HostId, Sha256Hex } from "./ids.ts";
import { readRecordJson, toRecordJson } from "./json.ts";
import { keyIdFor } from "./ids.ts";
import { LOCK_PAYLOAD_TYPE, lockSignatureValid, pae } from "./lock-signature.ts";
import type { KeyRefusal } from "./server-keys.ts";

export { LOCK_PAYLOAD_TYPE, lockSignatureValid, pae } from "./lock-signature.ts";

/** The fields of a lock, all required. */
export const LockPayload = z.strictObject({
  v: z.literal(1),
  chain: ChainId,
  lock_seq: z.number().int().nonnegative(),
  count: z.number().int().nonnegative(),
  head: Sha256Hex,
  prev_lock: Sha256Hex.nullable(),
  t: z.number().int().nonnegative(),
  final: z.boolean(),
  signer: z.enum(["host", "server"]),
  host: HostId,
  key_id: z.string().regex(/^[0-9a-f]{16}$/),
});
/** A parsed lock payload. */
export type LockPayload = z.infer<typeof LockPayload>;

/** A lock as it travels: the payload's exact Record JSON text and the hex signature. */
export const SignedLock = z.strictObject({
  payload: z.string().min(2).max(2048),
  sig: z.string().regex(/^[0-9a-f]{128}$/),
});
/** One of {@link SignedLock}. */
export type SignedLock = z.infer<typeof SignedLock>;

/** The hash of a lock, which the next lock names as `prev_lock`. */
export function lockHash(lock: SignedLock): string {
  return bytesToHex(sha256(pae(LOCK_PAYLOAD_TYPE, utf8(lock.payload))));
}

/** Writes and signs a lock. `key_id` is filled in from the secret key. */
export function signLock(fields: Omit<LockPayload, "v" | "key_id">, secretKey: Uint8Array): SignedLock {
  const ordered = LockPayload.parse({ v: 1, ...fields, key_id: keyIdFor(publicKeyOf(secretKey)) });
  const payload = toRecordJson(ordered);
  const sig = sign(secretKey, pae(LOCK_PAYLOAD_TYPE, utf8(payload)));
  return { payload, sig: bytesToHex(sig) };
}

const LOCK_MEMBERS = Object.keys(LockPayload.shape).join(",");

/** Reads a lock's payload, checking its form and member order: the payload, or why it is not a lock. */
export function readLock(lock: SignedLock): { payload: LockPayload; problem: null } | { payload: null; problem: string } {
  const read = readRecordJson(lock.payload);
  if (read.problem !== null) return { payload: null, problem: read.problem };
  const parsed = LockPayload.safeParse(read.value);
  if (!parsed.success) return { payload: null, problem: parsed.error.message };
  if (Object.keys(read.value as object).join(",") !== LOCK_MEMBERS)
    return { payload: null, problem: `lock members are not in the order ${LOCK_MEMBERS}` };
  return { payload: parsed.data, problem: null };
}

/** Parses a lock's payload (see {@link readLock}); throws with the reason when it is not a lock. */
export function parseLock(lock: SignedLock): LockPayload {
  const read = readLock(lock);
  if (read.problem !== null) throw new Error(read.problem);
  return read.payload;
}

/** One problem found by {@link verifyLocks}. */
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
    | KeyRefusal["code"];
  message: string;
}

/** What {@link verifyLocks} needs to know of the chain and the keys. */
export interface LockContext {
  chainId: string;
  /** How many frames the chain holds. */
  frameCount: number;
  /** The recomputed hash (hex) of the frame at a position below `frameCount`. */
  frameHash: (index: number) => string;
  /** The chain's genesis hash (the head of a lock with count 0). */
  genesis: Uint8Array;
  hostKey: Uint8Array;
  /**
   * The key a server-signed lock (a seal) is checked with, and why it may not sign it, if so
   * (see `server-keys.ts` pickKey).
   */
  serverKey: (lock: LockPayload) => { key: Uint8Array | null; refusal: KeyRefusal | null };
  /** When given, every lock must name this host. */
  hostId?: string;
  /**
   * Each lock's {@link lockSignatureValid} under the key of the signer its payload names (the host
   * key, or the server key {@link LockContext.serverKey} gives), when computed elsewhere (e.g.
   * another thread); by position. Missing entries are computed here.
   */
  signatures?: readonly boolean[];
  /** Each lock's payload as {@link parseLock} gives it (null where it throws), when parsed already; by position. */
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

/**
 * Checks a run's locks in order: form, chain id, signature (host locks with the host key, a seal
 * with the server key), lock_seq contiguity, the `prev_lock` link, counts never going back, each
 * head equal to the frame at its count, and nothing after a final lock.
 */
export function verifyLocks(locks: readonly SignedLock[], ctx: LockContext): LockSummary {
  const problems: LockProblem[] = [];
  const parsed: (LockPayload | null)[] = [];
  let prevHash: string | null = null;
  let prevCount = 0;
  let prevT = 0;
  let expectedSeq = 0;
  let finalSeen = false;
  let lockedCount = 0;
  let finalLocked = false;
  const genesis = bytesToHex(ctx.genesis);
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
      prevHash = safeLockHash(lock);
      expectedSeq = index + 1;
      return;
    }
    parsed.push(p);
    const at = p.lock_seq;
    if (p.chain !== ctx.chainId)
      problems.push({ lockSeq: at, code: "LOCK_CHAIN_MISMATCH", message: `lock names chain ${p.chain}, not ${ctx.chainId}` });
    if (ctx.hostId !== undefined && p.host !== ctx.hostId)
      problems.push({ lockSeq: at, code: "LOCK_HOST_MISMATCH", message: `lock names host ${p.host}, not ${ctx.hostId}` });
    const server = p.signer === "server" ? ctx.serverKey(p) : null;
    if (server?.refusal) problems.push({ lockSeq: at, code: server.refusal.code, message: server.refusal.message });
    const key = server ? server.key : ctx.hostKey;
    if (key && !(ctx.signatures?.[index] ?? lockSignatureValid(lock, key))) {
      problems.push({ lockSeq: at, code: "LOCK_SIG_INVALID", message: `signature does not verify under the ${p.signer} key` });
    }
    if (at !== expectedSeq) {
      const code = at < expectedSeq ? "LOCK_SEQ_DUPLICATE" : "LOCK_SEQ_GAP";
      problems.push({ lockSeq: at, code, message: `expected lock_seq ${expectedSeq}, found ${at}` });
    }
    if (p.prev_lock !== prevHash)
      problems.push({ lockSeq: at, code: "LOCK_CHAIN_BREAK", message: "prev_lock does not name the lock before it" });
    if (finalSeen) problems.push({ lockSeq: at, code: "LOCK_AFTER_FINAL", message: "a lock follows a final lock" });
    if (p.count < prevCount)
      problems.push({ lockSeq: at, code: "LOCK_REGRESSION", message: `count ${p.count} is below the previous lock's ${prevCount}` });
    if (p.t < prevT) problems.push({ lockSeq: at, code: "LOCK_TIME_REGRESSION", message: `time goes back ${prevT - p.t} ms` });
    if (p.count > ctx.frameCount) {
      problems.push({
        lockSeq: at,
        code: "LOCK_HEAD_MISMATCH",
        message: `lock covers ${p.count} frames but the chain holds ${ctx.frameCount}`,
      });
    } else if ((p.count === 0 ? genesis : ctx.frameHash(p.count - 1)) !== p.head) {
      problems.push({ lockSeq: at, code: "LOCK_HEAD_MISMATCH", message: `head does not match frame ${p.count - 1}` });
    }
    prevHash = lockHash(lock);
    prevCount = Math.max(prevCount, p.count);
    prevT = Math.max(prevT, p.t);
    expectedSeq = Math.max(expectedSeq, at + 1);
    lockedCount = Math.max(lockedCount, p.count);
    if (p.final) finalSeen = true;
  });
  const last = parsed.at(-1);
  finalLocked = !!last && last.final && last.count === ctx.frameCount;
  return { problems, lockedCount, finalLocked, parsed };
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
