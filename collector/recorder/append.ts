import { ChainWriter, type FrameKind, type Payload, type SignedLock } from "../../protocol/index.ts";
import type { BodyBytes, ChainRecord, Journal, JournalFrame, PendingBody } from "./journal/index.ts";
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
  /** The event id this entry records exactly once, the answer it gave, and whether that answer refused a tool call. */
  id?: string | null;
  answer?: unknown;
  refused?: boolean | undefined;
  /**
   * Durable by the journal's next group commit instead of before this returns (the gateway's calls,
   * whose client already has its answer): the steps take their place in the chain and their id now.
   */
  defer?: boolean;
  /**
   * The completion of an entry the journal holds as still being prepared (Journal.prepare): the
   * entries before it are in place. Any other append completes the chain's prepared entries first.
   */
  prepared?: boolean;
}

/**
 * Appends steps to a chain and makes them durable as one journal entry: each step's frame, its
 * bodies on disk, then an optional lock. All or nothing: when a step is refused (a payload over the
 * limit, a final chain) the writer goes back to where it was and nothing is written. The one append
 * path of the recorder (hooks, usage logs, timers, the gateway with `defer`) and of `oxagen agent backfill`.
 * Entries of the chain still being prepared (a gateway call on a worker thread) are completed first.
 */
export function appendSteps(journal: Journal, rec: ChainRecord, steps: (Step & { t?: number })[], opts: AppendOptions): JournalFrame[] {
  if (!opts.prepared) journal.ready(rec);
  const before = rec.writer.state;
  let t = Math.max(opts.t, rec.lastT);
  const frames: JournalFrame[] = [];
  const bodies: PendingBody[] = [];
  const bytes: BodyBytes[] = [];
  const locks: SignedLock[] = [];
  // A lock is never deferred: it covers only durable frames.
  const defer = opts.defer === true && !opts.lock;
  try {
    for (const s of steps) {
      t = Math.max(t, s.t ?? t);
      const { frame, hash } = rec.writer.append(s.kind, s.payload as Payload<FrameKind>, t);
      frames.push({ ...frame, hash });
      for (const b of s.bodies) {
        if (!b.bytes) continue;
        if (defer) bytes.push({ sha: b.ref.sha256, bytes: b.bytes });
        else journal.putBody(b.ref.sha256, b.bytes);
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
  const entry = {
    ...(id !== null ? { id, answer: opts.answer ?? {}, ...(opts.refused ? { refused: true as const } : {}) } : {}),
    frames,
    locks,
    bodies,
  };
  journal.commit(rec, entry, before, defer ? bytes : undefined);
  return frames;
}
