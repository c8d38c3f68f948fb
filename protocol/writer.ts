/**
 * Writing a chain: the one place frames and locks are made. Used by the collector's recorder,
 * the server (for seals), the vector generator and tests.
 * @module
 */
import { bytesToHex, fromHex, utf8 } from "./bytes.ts";
import { appendFrame, emptyHead, MAX_PAYLOAD_CHARS, type Frame, type ChainHead } from "./chain.ts";
import { type BodyRef, MAX_BODY_BYTES, PAYLOADS, type FrameKind, type Payload } from "./frames.ts";
import { sha256 } from "./hash.ts";
import { toRecordJson, type RecordJsonValue } from "./json.ts";
import { lockHash, signLock, type SignedLock } from "./lock.ts";

/** A chain writer's state, small enough to persist after every append. */
export interface WriterState {
  chain: string;
  count: number;
  head: string;
  lockSeq: number;
  lastLockHash: string | null;
  lockedCount: number;
  final: boolean;
}

/** Appends frames to one chain and locks it. Not safe for two writers on one chain. */
export class ChainWriter {
  #head: ChainHead;
  #lockSeq: number;
  #lastLockHash: string | null;
  #lockedCount: number;
  #final: boolean;

  constructor(chainOrState: string | WriterState) {
    if (typeof chainOrState === "string") {
      this.#head = emptyHead(chainOrState);
      this.#lockSeq = 0;
      this.#lastLockHash = null;
      this.#lockedCount = 0;
      this.#final = false;
    } else {
      const s = chainOrState;
      this.#head = { chainId: s.chain, count: s.count, head: fromHex(s.head, 32) };
      this.#lockSeq = s.lockSeq;
      this.#lastLockHash = s.lastLockHash;
      this.#lockedCount = s.lockedCount;
      this.#final = s.final;
    }
  }

  /** The state to persist. */
  get state(): WriterState {
    return {
      chain: this.#head.chainId,
      count: this.#head.count,
      head: bytesToHex(this.#head.head),
      lockSeq: this.#lockSeq,
      lastLockHash: this.#lastLockHash,
      lockedCount: this.#lockedCount,
      final: this.#final,
    };
  }

  /** Validates a payload against its kind's schema, writes it as Record JSON and appends it. */
  append<K extends FrameKind>(kind: K, payload: Payload<K>, t: number): { frame: Frame; hash: string } {
    if (this.#final) throw new Error(`chain ${this.#head.chainId} is final-locked`);
    const checked = PAYLOADS[kind].parse(payload);
    const frame: Frame = { seq: this.#head.count, t, kind, payload: toRecordJson(checked as RecordJsonValue) };
    // The server refuses a larger payload, and a refused frame would stop its chain's upload for good.
    if (frame.payload.length > MAX_PAYLOAD_CHARS) throw new Error(`${kind} payload is over ${MAX_PAYLOAD_CHARS} characters`);
    const { head, hash } = appendFrame(this.#head, frame);
    this.#head = head;
    return { frame, hash: bytesToHex(hash) };
  }

  /** True when frames were appended since the last lock. */
  get dirty(): boolean {
    return this.#head.count > this.#lockedCount;
  }

  /**
   * Locks the chain's head. Returns null when nothing is new and `final` is not asked for, or when
   * the chain is already final.
   */
  lock(opts: { secretKey: Uint8Array; hostId: string; t: number; final?: boolean; signer?: "host" | "server" }): SignedLock | null {
    const final = opts.final ?? false;
    if (this.#final || (!final && !this.dirty)) return null;
    const lock = signLock(
      {
        chain: this.#head.chainId,
        lock_seq: this.#lockSeq,
        count: this.#head.count,
        head: bytesToHex(this.#head.head),
        prev_lock: this.#lastLockHash,
        t: opts.t,
        final,
        signer: opts.signer ?? "host",
        host: opts.hostId,
      },
      opts.secretKey,
    );
    this.#lockSeq++;
    this.#lastLockHash = lockHash(lock);
    this.#lockedCount = this.#head.count;
    this.#final = final;
    return lock;
  }
}

/** A body's reference, given its (already redacted) bytes and whether the workspace keeps it. */
export function bodyRef(role: BodyRef["role"], bytes: Uint8Array | string, keep: true | "digest_only" | "retention"): BodyRef {
  const data = typeof bytes === "string" ? utf8(bytes) : bytes;
  const base = { role, sha256: bytesToHex(sha256(data)), size: data.length };
  if (data.length > MAX_BODY_BYTES) return { ...base, kept: false, why: "over_limit" };
  return keep === true ? { ...base, kept: true } : { ...base, kept: false, why: keep };
}
