import { closeSync, constants, ftruncateSync, fsyncSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { ChainWriter, type Frame, type SignedLock, type WriterState } from "../../../protocol/index.ts";
import type { BodyBytes } from "./body-store.ts";

/** What a chain part says about its run (RunMeta in protocol/api.ts); null for the host chain. */
export interface RunInfo {
  harness: string;
  agent: string | null;
  session_id: string;
}

export type JournalFrame = Frame & { hash: string };
export interface PendingBody {
  sha: string;
  role: string;
  /** The seq of the frame naming it: the body ships once the server holds that frame. */
  seq: number;
}

/** One durable step: what one hook event (or a timer) added to a chain. */
export interface Entry {
  id?: string;
  answer?: unknown;
  /** The answer refused the tool call the event asked for (recordOfflineAnswer compares an offline answer with it). */
  refused?: true;
  frames: JournalFrame[];
  locks: SignedLock[];
  bodies: PendingBody[];
}

/** One chain as the journal holds it: the writer and everything the server has not acknowledged. */
export interface ChainRecord {
  chain: string;
  run: RunInfo | null;
  writer: ChainWriter;
  stored: number;
  frames: JournalFrame[];
  locks: SignedLock[];
  bodies: PendingBody[];
  ids: Map<string, unknown>;
  /** The ids among `ids` whose answer refused a tool call. */
  refused: Set<string>;
  lastT: number;
  fd: number;
  lines: number;
  /** The file's length, counting the lines of deferred entries not yet known durable. */
  size: number;
  /** Where the durable part of the file ends: the deferred entries' lines follow it, in order. */
  durable: number;
  /** Entries appended in deferred mode (the gateway's), in chain order, not yet durable. */
  deferred: Deferred[];
  /** A group commit of this chain is under way (its fd must stay open). */
  flushing: boolean;
  /** Bumped when a failed write cut the file back: a group commit begun before must not mark its lines durable. */
  epoch: number;
  /** Entries whose frames are still being prepared off the event loop (the gateway's large calls), in chain order. */
  preparing: Preparing[];
}

/**
 * An entry whose place in the chain and id are taken, but whose frames are still being prepared
 * (a gateway call's bodies, redacted and hashed on a worker thread). `complete` appends it now,
 * preparing its frames on this thread when they are not ready, and removes it from `preparing`.
 */
export interface Preparing {
  id: string | null;
  /** Its frames are ready: it completes as soon as the entries before it have. */
  prepared: boolean;
  complete(): void;
}

/** An entry waiting for its chain's group commit (group-commit.ts), or an ack line behind such entries (entry null). */
export interface Deferred {
  /** The file offset just past its line. */
  end: number;
  line: Buffer;
  entry: Entry | null;
  bodies: BodyBytes[];
}

export interface Ack {
  stored: number;
  locks: number[];
  bodies: string[];
}

/** One line of a chain's file (docs/collector.md, "The journal"). */
export type Line =
  | { k: "open"; run: RunInfo | null; w: WriterState }
  /** A deferred entry's body, made durable in its group commit (base64): its file is written after, without an fsync of its own. */
  | { k: "body"; sha: string; b64: string }
  | ({ k: "ev"; w: WriterState } & Entry)
  | ({ k: "ack" } & Ack)
  | {
      k: "snap";
      run: RunInfo | null;
      w: WriterState;
      stored: number;
      frames: JournalFrame[];
      locks: SignedLock[];
      bodies: PendingBody[];
      ids: [string, unknown][];
      refused?: string[];
      lastT: number;
    };

/** A line's bytes in the file. */
export function encodeLine(line: Line): Buffer {
  return Buffer.from(`${JSON.stringify(line)}\n`);
}

/** A chain's record with nothing pending, its writer at `w` (a new chain's, or the state a file says). */
export function newRecord(chain: string, run: RunInfo | null, w: ChainWriter, fd: number, size: number): ChainRecord {
  return {
    chain,
    run,
    writer: w,
    stored: 0,
    frames: [],
    locks: [],
    bodies: [],
    ids: new Map(),
    refused: new Set(),
    lastT: 0,
    fd,
    lines: 0,
    size,
    durable: size,
    deferred: [],
    flushing: false,
    epoch: 0,
    preparing: [],
  };
}

/** The line a compaction writes: the chain's whole state and what is still pending. */
export function snapshotLine(rec: ChainRecord): Line {
  return {
    k: "snap",
    run: rec.run,
    w: rec.writer.state,
    stored: rec.stored,
    frames: rec.frames,
    locks: rec.locks,
    bodies: rec.bodies,
    ids: [...rec.ids],
    ...(rec.refused.size ? { refused: [...rec.refused] } : {}),
    lastT: rec.lastT,
  };
}

/**
 * Reads a chain's file back: its record (fd closed, -1), or null when it holds none (then the file
 * is removed). A torn last line is an event whose hook was never answered: it is cut off.
 * `onBody` is given each body line (its base64 bytes).
 */
export function readChainFile(path: string, chain: string, onBody: (sha: string, b64: string) => void): ChainRecord | null {
  const text = readFileSync(path, "utf8");
  let good = 0;
  let rec: ChainRecord | null = null;
  for (let at = 0; at < text.length; ) {
    const nl = text.indexOf("\n", at);
    if (nl < 0) break;
    let line: Line;
    try {
      line = JSON.parse(text.slice(at, nl)) as Line;
    } catch {
      break;
    }
    rec = replayLine(chain, rec, line, onBody);
    at = nl + 1;
    good = at;
  }
  const goodBytes = Buffer.byteLength(text.slice(0, good));
  const fd = openSync(path, "r+");
  if (goodBytes !== Buffer.byteLength(text)) {
    ftruncateSync(fd, goodBytes);
    fsyncSync(fd);
  }
  closeSync(fd);
  if (!rec) {
    rmSync(path, { force: true });
    return null;
  }
  rec.size = rec.durable = goodBytes;
  return rec;
}

function replayLine(chain: string, rec: ChainRecord | null, line: Line, onBody: (sha: string, b64: string) => void): ChainRecord {
  if (line.k === "open" || line.k === "snap") {
    const r = newRecord(chain, line.run, new ChainWriter(line.w), -1, 0);
    if (line.k === "snap") {
      Object.assign(r, {
        stored: line.stored,
        frames: line.frames,
        locks: line.locks,
        bodies: line.bodies,
        ids: new Map(line.ids),
        refused: new Set(line.refused ?? []),
        lastT: line.lastT,
      });
    }
    r.lines = 1;
    return r;
  }
  if (!rec) throw new Error(`journal ${chain}: first line is not open/snap`);
  if (line.k === "body") {
    onBody(line.sha, line.b64);
    return rec;
  }
  rec.lines++;
  if (line.k === "ev") {
    rec.writer = new ChainWriter(line.w);
    for (const f of line.frames) rec.lastT = Math.max(rec.lastT, f.t);
    rec.frames.push(...line.frames);
    rec.locks.push(...line.locks);
    rec.bodies.push(...line.bodies);
    if (line.id !== undefined) rec.ids.set(line.id, line.answer ?? {});
    if (line.id !== undefined && line.refused) rec.refused.add(line.id);
  } else {
    dropAcked(rec, line);
  }
  return rec;
}

/** What the server holds leaves the record, live and when the journal is read back alike. */
export function dropAcked(rec: ChainRecord, a: Ack): void {
  rec.stored = Math.max(rec.stored, a.stored);
  rec.frames = rec.frames.filter((f) => f.seq >= rec.stored);
  const locks = new Set(a.locks);
  rec.locks = rec.locks.filter((l) => !locks.has(lockSeqOf(l)));
  const bodies = new Set(a.bodies);
  rec.bodies = rec.bodies.filter((b) => !bodies.has(b.sha));
}

/** The lock_seq of a signed lock (its payload is Record JSON). */
export function lockSeqOf(lock: SignedLock): number {
  return (JSON.parse(lock.payload) as { lock_seq: number }).lock_seq;
}

/** Not O_APPEND: every line is written at its own offset (Linux appends a pwrite to an O_APPEND fd). */
export function openAppendable(path: string): number {
  return openSync(path, constants.O_WRONLY | constants.O_CREAT, 0o600);
}

export function writeAll(fd: number, bytes: Uint8Array, at: number): void {
  for (let off = 0; off < bytes.length; ) {
    const n = writeSync(fd, bytes, off, bytes.length - off, at + off);
    if (n <= 0) throw new Error("short write to the journal");
    off += n;
  }
}
