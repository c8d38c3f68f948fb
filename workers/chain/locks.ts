import {
  bytesToHex,
  type ChainAck,
  fromHex,
  genesisHash,
  type LockPayload,
  lockHash,
  lockSignatureValid,
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

/**
 * Takes a part's locks in lock_seq order. A lock is stored only when it is the next one, signed by
 * the chain's host key (its first lock picks it among the host's keys), links to the last lock, does not go back, and its head is the stored frame at its
 * count; a final lock must also cover every frame the server received, stored or held. A lock
 * ahead of the stored frames is refused (not held): the collector resends it with the frames, and
 * the ack says so. A different lock at a stored lock_seq is equivocation; a lock whose head differs
 * from the stored chain, or a final lock that leaves received frames outside it, is a broken
 * chain. Those refusals are kept as evidence in the gap book.
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
    if (p.chain !== st.chain) {
      refuse("the lock names another chain");
      continue;
    }
    if (p.signer !== "host" || p.host !== st.hostId) {
      refuse("only this host's own locks are accepted");
      continue;
    }
    // Until its first lock, a chain takes any key the host holds or held; from then on, only that one.
    const key = st.keyPinned ? st.hostKey : (hostKeys.find((k) => k.keyId === p.key_id)?.pub ?? st.hostKey);
    if (!lockSignatureValid(lock, fromHex(key, 32))) {
      refuse(
        st.keyPinned
          ? "the signature does not verify under the key this chain is locked with"
          : "the signature does not verify under a key of this host",
      );
      continue;
    }
    if (p.lock_seq < st.lockNext) {
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
    if (st.final) {
      refuse(st.sealed ? "the run is sealed by an operator" : "the chain already has a final lock");
      continue;
    }
    if (p.lock_seq > st.lockNext) {
      refuse(`expected lock_seq ${st.lockNext}; send the locks in order`);
      continue;
    }
    if (p.prev_lock !== st.lastLock) {
      refuse("prev_lock does not name the last stored lock");
      continue;
    }
    if (p.count < st.lockedCount) {
      refuse(`count ${p.count} is below the last lock's ${st.lockedCount}`);
      continue;
    }
    if (p.count > st.count) {
      refuse(`the lock covers ${p.count} frames but ${st.count} are stored; resend it after the frames`);
      continue;
    }
    const expected =
      p.count === 0
        ? bytesToHex(genesisHash(st.chain))
        : store.sql.exec<{ hash: string }>("SELECT hash FROM frames WHERE seq = ?", p.count - 1).one().hash;
    if (expected !== p.head) {
      store.addGap({
        kind: "broken_chain",
        seq: p.lock_seq,
        count: p.count,
        detail: `lock ${p.lock_seq} names a head that is not the stored frame ${p.count - 1}`,
      });
      refuse("the lock's head does not match the stored chain");
      changed = true;
      continue;
    }
    const outside = p.final ? framesOutside(store.sql, st, p.count) : null;
    if (outside) {
      if (store.addEquivocation("lock", p.lock_seq, JSON.stringify(lock))) {
        store.addGap({
          kind: "broken_chain",
          seq: p.lock_seq,
          count: p.count,
          detail: `final lock ${p.lock_seq} covers ${p.count} frames but ${outside}; it was refused and is kept as evidence`,
        });
        changed = true;
      }
      refuse(`a final lock must cover every frame received, but ${outside}`);
      continue;
    }
    st.hostKey = key;
    storeLock(store.sql, st, lock, p, now);
    ack.locks_stored++;
    changed = true;
  }
  return changed;
}

// The frames a final lock at `count` would leave out of the record, said as a sentence, or null.
function framesOutside(sql: SqlStorage, st: ChainState, count: number): string | null {
  if (count < st.count) return `${st.count} are stored`;
  const held = heldRange(sql);
  return held ? `${held.n} frames (seq ${held.lo} to ${held.hi}) were received beyond a hole` : null;
}
