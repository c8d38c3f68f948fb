import {
  type ChainAck,
  fromHex,
  genesisHash,
  type LockCursor,
  type LockPayload,
  type LockProblem,
  lockHash,
  lockProblems,
  parseLock,
  type SignedLock,
} from "../../protocol/index.ts";
import type { ChainState } from "./state.ts";

/** What the lock pass needs from the object: its SQL, the gap book and the evidence store. */
export interface LockStore {
  sql: SqlStorage;
  addGap(gap: { kind: string; seq?: number; from_seq?: number; to_seq?: number; count?: number; detail: string }): boolean;
  addEquivocation(what: "lock", seq: number, evidence: string): boolean;
}

/** The frames held beyond a hole: the lowest and highest seq and how many, or null when none is held. */
export function heldRange(sql: SqlStorage): { lo: number; hi: number; n: number } | null {
  const r = sql
    .exec<{ lo: number | null; hi: number | null; n: number }>("SELECT min(seq) AS lo, max(seq) AS hi, count(*) AS n FROM held")
    .one();
  return r.n > 0 && r.lo !== null && r.hi !== null ? { lo: r.lo, hi: r.hi, n: r.n } : null;
}

/**
 * Stores a lock the chain accepted and advances its lock state: the one place a lock joins a
 * chain, a host's lock and an operator's seal alike.
 */
export function storeLock(sql: SqlStorage, st: ChainState, lock: SignedLock, p: LockPayload, now: number): void {
  st.keyPinned = true;
  sql.exec(
    "INSERT INTO locks (lock_seq, payload, sig, count, final, received_ms) VALUES (?, ?, ?, ?, ?, ?)",
    p.lock_seq,
    lock.payload,
    lock.sig,
    p.count,
    p.final ? 1 : 0,
    now,
  );
  st.lockNext = p.lock_seq + 1;
  st.lastLock = lockHash(lock);
  st.lockedCount = p.count;
  st.final = p.final;
}

/** The order the intake answers a lock's problems in: the first the lock has is its refusal. */
const REFUSAL_ORDER: LockProblem["code"][] = [
  "LOCK_CHAIN_MISMATCH",
  "LOCK_HOST_MISMATCH",
  "LOCK_SIG_INVALID",
  "LOCK_SEQ_DUPLICATE",
  "LOCK_AFTER_FINAL",
  "LOCK_SEQ_GAP",
  "LOCK_CHAIN_BREAK",
  "LOCK_REGRESSION",
  "LOCK_HEAD_MISMATCH",
  "FRAMES_AFTER_FINAL",
];

/**
 * Takes a part's locks in lock_seq order. A lock is stored only when protocol's `lockProblems`
 * finds no problem with it after the chain's last stored lock (a time going back is only a note):
 * signed by the chain's host key (its first lock picks it among the host's keys), the next
 * lock_seq, linked to the last lock, not going back, its head the stored frame at its count, a
 * final lock covering every stored frame; a final lock must also leave out no frame held beyond a
 * hole. A lock ahead of the stored frames is refused (not held): the collector resends it with the
 * frames, and the ack says so. A different lock at a stored lock_seq is equivocation; a lock whose
 * head differs from the stored chain, or a final lock that leaves received frames outside it, is
 * a broken chain. Those refusals are kept as evidence in the gap book.
 */
export function takeLocks(
  store: LockStore,
  st: ChainState,
  locks: readonly SignedLock[],
  hostKeys: readonly { keyId: string; pub: string }[],
  now: number,
  ack: ChainAck,
): boolean {
  let changed = false;
  const parsed = locks.map((lock) => ({ lock, p: parseLock(lock) })).sort((a, b) => a.p.lock_seq - b.p.lock_seq);
  for (const { lock, p } of parsed) {
    const refuse = (reason: string) => ack.locks_refused.push({ lock_seq: p.lock_seq, reason });
    // Until its first lock, a chain takes any key the host holds or held; from then on, only that one.
    const key = st.keyPinned ? st.hostKey : (hostKeys.find((k) => k.keyId === p.key_id)?.pub ?? st.hostKey);
    const problems = lockProblems(lock, p, cursorOf(st), {
      chainId: st.chain,
      hostId: st.hostId,
      frameCount: st.count,
      frameHash: (index) => store.sql.exec<{ hash: string }>("SELECT hash FROM frames WHERE seq = ?", index).one().hash,
      genesis: genesisHash(st.chain),
      hostKey: fromHex(key, 32),
    });
    const problem = REFUSAL_ORDER.map((code) => problems.find((x) => x.code === code)).find((x) => x !== undefined);
    const outside = problem ? null : p.final ? heldOutside(store.sql) : null;
    if (!problem && !outside) {
      st.hostKey = key;
      storeLock(store.sql, st, lock, p, now);
      ack.locks_stored++;
      changed = true;
      continue;
    }
    switch (problem?.code) {
      case "LOCK_CHAIN_MISMATCH":
        refuse("the lock names another chain");
        continue;
      case "LOCK_HOST_MISMATCH":
        refuse("only this host's own locks are accepted");
        continue;
      case "LOCK_SIG_INVALID":
        refuse(
          st.keyPinned
            ? "the signature does not verify under the key this chain is locked with"
            : "the signature does not verify under a key of this host",
        );
        continue;
      case "LOCK_SEQ_DUPLICATE": {
        const stored = store.sql
          .exec<{ payload: string; sig: string }>("SELECT payload, sig FROM locks WHERE lock_seq = ?", p.lock_seq)
          .one();
        if (stored.payload === lock.payload) continue;
        if (st.sealed && stored.payload.includes('"signer":"server"')) {
          refuse("the run is sealed by an operator");
          continue;
        }
        if (store.addEquivocation("lock", p.lock_seq, JSON.stringify(lock))) {
          store.addGap({
            kind: "equivocation",
            seq: p.lock_seq,
            detail: `a second, different lock ${p.lock_seq} arrived; it is kept as evidence`,
          });
          changed = true;
        }
        refuse("a different lock with this lock_seq is already stored");
        continue;
      }
      case "LOCK_AFTER_FINAL":
        refuse(st.sealed ? "the run is sealed by an operator" : "the chain already has a final lock");
        continue;
      case "LOCK_SEQ_GAP":
        refuse(`expected lock_seq ${st.lockNext}; send the locks in order`);
        continue;
      case "LOCK_CHAIN_BREAK":
        refuse("prev_lock does not name the last stored lock");
        continue;
      case "LOCK_REGRESSION":
        refuse(`count ${p.count} is below the last lock's ${st.lockedCount}`);
        continue;
      case "LOCK_HEAD_MISMATCH":
        if (problem.beyond) {
          refuse(`the lock covers ${p.count} frames but ${st.count} are stored; resend it after the frames`);
          continue;
        }
        store.addGap({
          kind: "broken_chain",
          seq: p.lock_seq,
          count: p.count,
          detail: `lock ${p.lock_seq} names a head that is not the stored frame ${p.count - 1}`,
        });
        refuse("the lock's head does not match the stored chain");
        changed = true;
        continue;
      default: {
        // A final lock that leaves frames out: stored ones (FRAMES_AFTER_FINAL) or ones held beyond a hole.
        const left = outside ?? `${st.count} are stored`;
        if (store.addEquivocation("lock", p.lock_seq, JSON.stringify(lock))) {
          store.addGap({
            kind: "broken_chain",
            seq: p.lock_seq,
            count: p.count,
            detail: `final lock ${p.lock_seq} covers ${p.count} frames but ${left}; it was refused and is kept as evidence`,
          });
          changed = true;
        }
        refuse(`a final lock must cover every frame received, but ${left}`);
      }
    }
  }
  return changed;
}

/** Where the chain's stored locks stand, as protocol's lock rule reads it (the last lock's time is not kept). */
function cursorOf(st: ChainState): LockCursor {
  return { nextSeq: st.lockNext, prevHash: st.lastLock, count: st.lockedCount, t: null, final: st.final };
}

// The frames held beyond a hole that a final lock would leave out of the record, said as a sentence, or null.
function heldOutside(sql: SqlStorage): string | null {
  const held = heldRange(sql);
  return held ? `${held.n} frames (seq ${held.lo} to ${held.hi}) were received beyond a hole` : null;
}
