import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { ChainWriter, type Frame, type SignedLock, type WriterState } from "../../protocol/index.ts";

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
  lastT: number;
  fd: number;
  lines: number;
}

type Line =
  | { k: "open"; run: RunInfo | null; w: WriterState }
  | ({ k: "ev"; w: WriterState } & Entry)
  | { k: "ack"; stored: number; locks: number[]; bodies: string[] }
  | {
      k: "snap";
      run: RunInfo | null;
      w: WriterState;
      stored: number;
      frames: JournalFrame[];
      locks: SignedLock[];
      bodies: PendingBody[];
      ids: [string, unknown][];
      lastT: number;
    };

const COMPACT_AFTER_LINES = 2000;

/**
 * The recorder's durable state: one append-only JSONL file per chain under journal/, bodies
 * waiting to ship under journal/bodies/. Every line is written and fsync'd before the hook that
 * caused it is answered; one line per event makes an event all-or-nothing (a torn last line is
 * cut off on load). Acknowledged frames leave the file when it is compacted (temp + rename).
 */
export class Journal {
  readonly dir: string;
  readonly chains = new Map<string, ChainRecord>();
  readonly #ids = new Map<string, unknown>();

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(join(dir, "bodies"), { recursive: true, mode: 0o700 });
    for (const name of readdirSync(dir)) {
      if (name.endsWith(".jsonl")) this.#load(name.slice(0, -".jsonl".length));
      else if (name.endsWith(".tmp")) rmSync(join(dir, name), { force: true });
    }
  }

  /** The answer given to an event id already recorded, if any. */
  answered(id: string): unknown {
    return this.#ids.get(id);
  }

  has(id: string): boolean {
    return this.#ids.has(id);
  }

  /** The chain's record, created (and made durable) on first use. */
  open(chain: string, run: RunInfo | null): ChainRecord {
    const existing = this.chains.get(chain);
    if (existing) return existing;
    const path = this.#path(chain);
    const fd = openSync(path, "a", 0o600);
    const rec: ChainRecord = {
      chain,
      run,
      writer: new ChainWriter(chain),
      stored: 0,
      frames: [],
      locks: [],
      bodies: [],
      ids: new Map(),
      lastT: 0,
      fd,
      lines: 0,
    };
    this.#write(rec, { k: "open", run, w: rec.writer.state });
    fsyncDir(this.dir);
    this.chains.set(chain, rec);
    return rec;
  }

  /** Writes a body to ship (idempotent; content-addressed) and fsyncs it. */
  putBody(sha: string, bytes: Uint8Array): void {
    const path = join(this.dir, "bodies", sha);
    if (existsSync(path)) return;
    const tmp = `${path}.tmp`;
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  }

  body(sha: string): Buffer | null {
    try {
      return readFileSync(join(this.dir, "bodies", sha));
    } catch {
      return null;
    }
  }

  /**
   * Makes an entry durable, then applies it in memory. The frames and locks must already have
   * been produced by `rec.writer`; on a failed write the writer is rolled back to `before`.
   */
  commit(rec: ChainRecord, entry: Entry, before: WriterState): void {
    try {
      this.#write(rec, { k: "ev", ...entry, w: rec.writer.state });
    } catch (err) {
      rec.writer = new ChainWriter(before);
      throw err;
    }
    this.#apply(rec, entry);
  }

  /** Records what the server acknowledged, then compacts when the file has grown. */
  ack(rec: ChainRecord, stored: number, locks: number[], bodies: string[]): void {
    if (stored <= rec.stored && locks.length === 0 && bodies.length === 0) return;
    const line = { k: "ack" as const, stored: Math.max(stored, rec.stored), locks, bodies };
    this.#write(rec, line);
    this.#applyAck(rec, line);
    if (rec.lines > COMPACT_AFTER_LINES || (rec.frames.length === 0 && rec.locks.length === 0 && rec.lines > 50)) this.compact(rec);
  }

  /** Rewrites a chain's file as one snapshot line: its state, its ids, what is still pending. */
  compact(rec: ChainRecord): void {
    const path = this.#path(rec.chain);
    const tmp = `${path}.tmp`;
    const fd = openSync(tmp, "w", 0o600);
    const snap: Line = {
      k: "snap",
      run: rec.run,
      w: rec.writer.state,
      stored: rec.stored,
      frames: rec.frames,
      locks: rec.locks,
      bodies: rec.bodies,
      ids: [...rec.ids],
      lastT: rec.lastT,
    };
    try {
      writeSync(fd, `${JSON.stringify(snap)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    fsyncDir(this.dir);
    closeSync(rec.fd);
    rec.fd = openSync(path, "a", 0o600);
    rec.lines = 1;
    this.#collectBodies();
  }

  close(): void {
    for (const rec of this.chains.values()) closeSync(rec.fd);
  }

  #path(chain: string): string {
    return join(this.dir, `${chain}.jsonl`);
  }

  // A short or failed write must leave no partial line: loading stops at the first bad line and
  // would drop every later (answered) event with it.
  #write(rec: ChainRecord, line: Line): void {
    const bytes = Buffer.from(`${JSON.stringify(line)}\n`);
    const size = fstatSync(rec.fd).size;
    try {
      if (writeSync(rec.fd, bytes) !== bytes.length) throw new Error("short write to the journal");
      fsyncSync(rec.fd);
    } catch (err) {
      try {
        ftruncateSync(rec.fd, size);
      } catch {
        // The next load cuts a torn last line anyway.
      }
      throw err;
    }
    rec.lines++;
  }

  #apply(rec: ChainRecord, e: Entry): void {
    rec.frames.push(...e.frames);
    rec.locks.push(...e.locks);
    rec.bodies.push(...e.bodies);
    for (const f of e.frames) rec.lastT = Math.max(rec.lastT, f.t);
    if (e.id !== undefined) {
      rec.ids.set(e.id, e.answer ?? {});
      this.#ids.set(e.id, e.answer ?? {});
    }
  }

  #applyAck(rec: ChainRecord, a: Ack): void {
    dropAcked(rec, a);
    for (const sha of a.bodies) if (!this.#bodyWanted(sha)) rmSync(join(this.dir, "bodies", sha), { force: true });
  }

  #bodyWanted(sha: string): boolean {
    for (const rec of this.chains.values()) if (rec.bodies.some((b) => b.sha === sha)) return true;
    return false;
  }

  #collectBodies(): void {
    for (const name of readdirSync(join(this.dir, "bodies"))) {
      if (/^[0-9a-f]{64}$/.test(name) && !this.#bodyWanted(name)) rmSync(join(this.dir, "bodies", name), { force: true });
    }
  }

  #load(chain: string): void {
    const path = this.#path(chain);
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
      rec = this.#replay(chain, rec, line);
      at = nl + 1;
      good = at;
    }
    const fd = openSync(path, "r+");
    // A torn last line is an event whose hook was never answered: cut it off.
    if (Buffer.byteLength(text.slice(0, good)) !== Buffer.byteLength(text)) {
      ftruncateSync(fd, Buffer.byteLength(text.slice(0, good)));
      fsyncSync(fd);
    }
    closeSync(fd);
    if (!rec) {
      rmSync(path, { force: true });
      return;
    }
    rec.fd = openSync(path, "a", 0o600);
    this.chains.set(chain, rec);
    for (const [id, answer] of rec.ids) this.#ids.set(id, answer);
  }

  #replay(chain: string, rec: ChainRecord | null, line: Line): ChainRecord {
    if (line.k === "open" || line.k === "snap") {
      const r: ChainRecord = {
        chain,
        run: line.run,
        writer: new ChainWriter(line.w),
        stored: 0,
        frames: [],
        locks: [],
        bodies: [],
        ids: new Map(),
        lastT: 0,
        fd: -1,
        lines: 0,
      };
      if (line.k === "snap") {
        Object.assign(r, {
          stored: line.stored,
          frames: line.frames,
          locks: line.locks,
          bodies: line.bodies,
          ids: new Map(line.ids),
          lastT: line.lastT,
        });
      }
      r.lines = 1;
      return r;
    }
    if (!rec) throw new Error(`journal ${chain}: first line is not open/snap`);
    rec.lines++;
    if (line.k === "ev") {
      rec.writer = new ChainWriter(line.w);
      for (const f of line.frames) rec.lastT = Math.max(rec.lastT, f.t);
      rec.frames.push(...line.frames);
      rec.locks.push(...line.locks);
      rec.bodies.push(...line.bodies);
      if (line.id !== undefined) rec.ids.set(line.id, line.answer ?? {});
    } else {
      dropAcked(rec, line);
    }
    return rec;
  }
}

interface Ack {
  stored: number;
  locks: number[];
  bodies: string[];
}

// What the server holds leaves the record, live and when the journal is read back alike.
function dropAcked(rec: ChainRecord, a: Ack): void {
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

function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic there.
  }
}
