import { ChainWriter, type FrameKind, type Payload, type SignedLock } from "../../protocol/index.ts";
import type { ChainRecord, Journal, JournalFrame, PendingBody } from "./journal.ts";
import type { Step } from "./mapper.ts";

/** The host's signing identity, for the lock that may close an append. */
export interface LockKey {
  secretKey: Uint8Array;
  hostId: string;
}

export interface AppendOptions {
  /** The time of the steps; a step's own `t` is used when later. Never before the chain's last frame. */
  t: number;
  /** Lock the chain after the steps (a lock with no steps is a plain periodic lock). */
  lock: boolean;
  final: boolean;
  key: LockKey;
  /** The lock's time when later than the last frame's (a backfill locks when it runs, not when the session ran). */
  lockT?: number;
  /** The event id this entry records exactly once, and the answer it gave. */
  id?: string | null;
  answer?: unknown;
}

/**
 * Appends steps to a chain and makes them durable as one journal entry: each step's frame, its
 * bodies on disk, then an optional lock. All or nothing: when a step is refused (a payload over the
 * limit, a final chain) the writer goes back to where it was and nothing is written. The one append
 * path of the recorder (hooks, usage logs, timers) and of `oxagen agent backfill`.
 */
export function appendSteps(journal: Journal, rec: ChainRecord, steps: (Step & { t?: number })[], opts: AppendOptions): JournalFrame[] {
  const before = rec.writer.state;
  let t = Math.max(opts.t, rec.lastT);
  const frames: JournalFrame[] = [];
  const bodies: PendingBody[] = [];
  const locks: SignedLock[] = [];
  try {
    for (const s of steps) {
      t = Math.max(t, s.t ?? t);
      const { frame, hash } = rec.writer.append(s.kind, s.payload as Payload<FrameKind>, t);
      frames.push({ ...frame, hash });
      for (const b of s.bodies) {
        if (!b.bytes) continue;
        journal.putBody(b.ref.sha256, b.bytes);
        bodies.push({ sha: b.ref.sha256, role: b.ref.role, seq: frame.seq });
      }
    }
    const lock = opts.lock ? rec.writer.lock({ ...opts.key, t: Math.max(t, opts.lockT ?? t), final: opts.final }) : null;
    if (lock) locks.push(lock);
  } catch (err) {
    rec.writer = new ChainWriter(before);
    throw err;
  }
  const id = opts.id ?? null;
  journal.commit(rec, { ...(id !== null ? { id, answer: opts.answer ?? {} } : {}), frames, locks, bodies }, before);
  return frames;
}
