import { closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ChainWriter, type WriterState } from "../../../protocol/index.ts";
import { type BodyBytes, BodyStore, fsyncDir } from "./body-store.ts";
import {
  type Ack,
  type ChainRecord,
  dropAcked,
  encodeLine,
  type Entry,
  type Line,
  newRecord,
  openAppendable,
  type Preparing,
  readChainFile,
  type RunInfo,
  snapshotLine,
  writeAll,
} from "./codec.ts";
import { GroupCommit, readyPrepared } from "./group-commit.ts";

export type { BodyBytes } from "./body-store.ts";
export type { ChainRecord, Entry, JournalFrame, PendingBody, Preparing, RunInfo } from "./codec.ts";
export { lockSeqOf } from "./codec.ts";
export { MAX_DEFERRED } from "./group-commit.ts";

const COMPACT_AFTER_LINES = 2000;

/**
 * The recorder's durable state: one append-only JSONL file per chain under journal/, bodies
 * waiting to ship under journal/bodies/. Every line is written and fsync'd before the hook that
 * caused it is answered (the gateway's deferred entries: by a group commit just after its client
 * had its answer); one line per event makes an event all-or-nothing (a torn last line is cut off
 * on load). Acknowledged frames leave the file when it is compacted (temp + rename).
 */
export class Journal {
  readonly dir: string;
  readonly chains = new Map<string, ChainRecord>();
  readonly #ids = new Map<string, unknown>();
  readonly #refused = new Set<string>();

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(join(dir, "bodies"), { recursive: true, mode: 0o700 });
    this.#store = new BodyStore(join(dir, "bodies"), (err) => this.onError(err));
    for (const name of readdirSync(dir)) {
      if (name.endsWith(".jsonl")) this.#load(name.slice(0, -".jsonl".length));
      else if (name.endsWith(".tmp")) rmSync(join(dir, name), { force: true });
    }
    for (const name of readdirSync(join(dir, "bodies"))) if (name.endsWith(".tmp")) rmSync(join(dir, "bodies", name), { force: true });
    this.#store.restore([...this.chains.values()].flatMap((r) => r.bodies.map((b) => b.sha)));
  }

  /** Told when deferred entries became durable (their frames may ship now). */
  onDurable: () => void = () => {};
  /**
   * Told when a group commit failed (it is retried, and any synchronous write makes those entries
   * durable first), and at close of each chain whose waiting entries could not be written (lost).
   */
  onError: (err: Error) => void = () => {};
  readonly #store: BodyStore;
  readonly #group = new GroupCommit({
    closed: () => this.#closed,
    chains: () => this.chains.values(),
    settle: (rec) => this.#settle(rec),
    onError: (err) => this.onError(err),
  });
  #closed = false;

  /** The answer given to an event id already recorded, if any. */
  answered(id: string): unknown {
    return this.#ids.get(id);
  }

  has(id: string): boolean {
    return this.#ids.has(id);
  }

  /** Whether the answer given to an event id refused the tool call it asked for. */
  refused(id: string): boolean {
    return this.#refused.has(id);
  }

  /** The chain's record, created (and made durable) on first use. */
  open(chain: string, run: RunInfo | null): ChainRecord {
    const existing = this.chains.get(chain);
    if (existing) return existing;
    const path = this.#path(chain);
    const fd = openAppendable(path);
    const rec = newRecord(chain, run, new ChainWriter(chain), fd, fstatSync(fd).size);
    this.#write(rec, { k: "open", run, w: rec.writer.state });
    fsyncDir(this.dir);
    this.chains.set(chain, rec);
    if (this.#closed) {
      closeSync(fd);
      rec.fd = -1;
    }
    return rec;
  }

  /** Writes a body to ship (idempotent; content-addressed) and fsyncs it. */
  putBody(sha: string, bytes: Uint8Array): void {
    this.#store.put(sha, bytes);
  }

  body(sha: string): Buffer | null {
    return this.#store.get(sha);
  }

  /**
   * Makes an entry durable, then applies it in memory. The frames and locks must already have
   * been produced by `rec.writer`; on a failed write the writer is rolled back to `before`.
   *
   * With `deferred` (the gateway's calls: their client has its answer already) the entry takes its
   * place in the chain and its id now (`has` sees it), and becomes durable with every other
   * deferred entry of the moment in one group commit off the event loop: its bodies, then its line,
   * one fsync. Until then its frames are not in `rec.frames` (nothing ships or is locked that is not
   * durable), and any synchronous write to the chain writes the deferred lines first.
   */
  commit(rec: ChainRecord, entry: Entry, before: WriterState, deferred?: BodyBytes[]): void {
    const line: Line = { k: "ev", ...entry, w: rec.writer.state };
    // Closed (a call that ended during the stop): no group commit will come, so it is written now.
    if (deferred && this.#group.accepts(rec)) {
      this.#group.defer(rec, entry, encodeLine(line), deferred);
      this.#claim(rec, entry);
      return;
    }
    try {
      for (const b of deferred ?? []) this.putBody(b.sha, b.bytes);
      this.#write(rec, line);
    } catch (err) {
      rec.writer = new ChainWriter(before);
      throw err;
    }
    this.#apply(rec, entry);
  }

  /**
   * Keeps ids with no frame (a usage log's call matched to the one the gateway recorded): durable
   * by the next group commit, in the chain's file, so `has` sees them after a restart too.
   */
  mark(rec: ChainRecord, ids: string[]): void {
    for (const id of ids) this.commit(rec, { id, frames: [], locks: [], bodies: [] }, rec.writer.state, []);
  }

  /**
   * Takes a place in the chain for an entry still being prepared, and its id now (`has` sees it,
   * as for a deferred entry). Whatever else is about to be written to the chain completes it first
   * ({@link ready}), so no entry goes before one that preceded it.
   */
  prepare(rec: ChainRecord, p: Preparing): void {
    rec.preparing.push(p);
    if (p.id !== null) this.#claim(rec, { id: p.id, frames: [], locks: [], bodies: [] });
  }

  /**
   * Completes, in order and on this thread, the chain's entries still being prepared: all of them,
   * or (`readyOnly`, when a worker answered) those at the head whose frames are ready.
   */
  ready(rec: ChainRecord, readyOnly = false): void {
    readyPrepared(rec, readyOnly);
  }

  /** Gives back the id of a prepared entry that could not be appended (its call is not recorded). */
  release(rec: ChainRecord, id: string): void {
    rec.ids.delete(id);
    this.#ids.delete(id);
  }

  /** Completes every entry still being prepared, on every chain (at stop). */
  readyAll(): void {
    for (const rec of this.chains.values()) this.ready(rec);
  }

  /**
   * Makes every deferred entry durable now, on this thread (at stop, and before reading the files
   * back). A chain that cannot be written does not stop the others: each failure is in the
   * AggregateError thrown once all were tried.
   */
  flushSync(): void {
    const failed: Error[] = [];
    for (const rec of this.chains.values()) {
      let n = 0;
      try {
        this.ready(rec);
        n = rec.deferred.filter((d) => d.entry).length;
        if (rec.deferred.length) this.#write(rec, null);
        // Their files too, now (whoever reads the files back next must find them).
        this.#store.writeAll();
      } catch (err) {
        const what = n === 0 ? "a gateway call being prepared" : n === 1 ? "1 gateway entry" : `${n} gateway entries`;
        failed.push(new Error(`journal ${rec.chain}: ${what} could not be written: ${(err as Error).message}`, { cause: err }));
      }
    }
    if (failed.length) throw new AggregateError(failed, failed.map((e) => e.message).join("; "));
  }

  /** Resolves once no entry is being prepared or waiting to be durable, and no group commit is under way. */
  async settled(): Promise<void> {
    while ([...this.chains.values()].some((r) => r.preparing.length || r.deferred.length || r.flushing) || this.#store.busy)
      await new Promise((r) => setTimeout(r, 1));
  }

  /** Records what the server acknowledged, then compacts when the file has grown. */
  ack(rec: ChainRecord, stored: number, locks: number[], bodies: string[]): void {
    if (stored <= rec.stored && locks.length === 0 && bodies.length === 0) return;
    const line: Line & Ack = { k: "ack", stored: Math.max(stored, rec.stored), locks, bodies };
    // Not fsync'd on its own (the next fsync of the file covers it): an ack a crash loses only ships
    // those frames and bodies again, which the server takes as duplicates. Behind the gateway's
    // waiting entries it joins their group commit (written now, it would fsync them on the event
    // loop: each body's ack did, twice a call).
    if (rec.deferred.length && this.#group.accepts(rec)) {
      this.#group.trail(rec, encodeLine(line));
    } else this.#write(rec, line, false);
    this.#applyAck(rec, line);
    const idle = rec.frames.length === 0 && rec.locks.length === 0 && rec.bodies.length === 0;
    if (rec.lines > COMPACT_AFTER_LINES || (idle && rec.lines > 50)) this.compact(rec);
  }

  /** Rewrites a chain's file as one snapshot line: its state, its ids, what is still pending. */
  compact(rec: ChainRecord): void {
    // A group commit holds the file's fd: compact at a later ack (closed: at the next start).
    if (rec.flushing || this.#closed) return;
    // The snapshot holds the ids: an id it holds has its frame in it.
    this.ready(rec);
    if (rec.deferred.length) this.#write(rec, null);
    // The bodies still to ship whose durable copy is a body line keep one, after the snapshot.
    const kept = [...new Set(rec.bodies.map((b) => b.sha))].flatMap((sha) => this.#store.lineOf(sha) ?? []);
    const path = this.#path(rec.chain);
    const tmp = `${path}.tmp`;
    const fd = openSync(tmp, "w", 0o600);
    const bytes = Buffer.concat([encodeLine(snapshotLine(rec)), Buffer.from(kept.join(""))]);
    try {
      writeAll(fd, bytes, 0);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    fsyncDir(this.dir);
    closeSync(rec.fd);
    rec.fd = openAppendable(path);
    rec.size = rec.durable = bytes.length;
    rec.lines = 1;
    this.#collectBodies();
  }

  /**
   * Writes every chain's deferred entries (each chain that fails is reported to `onError`, the
   * others are written) and closes the files. An entry committed after this is written at once,
   * its file opened for that write.
   */
  close(): void {
    try {
      this.flushSync();
    } catch (err) {
      for (const e of err instanceof AggregateError ? (err.errors as Error[]) : [err as Error]) this.onError(e);
    }
    this.#closed = true;
    // A group commit still under way closes its chain's fd when it ends.
    for (const rec of this.chains.values()) {
      if (rec.flushing) continue;
      closeSync(rec.fd);
      rec.fd = -1;
    }
  }

  #path(chain: string): string {
    return join(this.dir, `${chain}.jsonl`);
  }

  // A short or failed write must leave no partial line: loading stops at the first bad line and
  // would drop every later (answered) event with it. Deferred lines go first (their bodies before
  // them), so the file keeps the chain's order and a lock never covers a frame that is not durable.
  // Lines are written at their own offsets (the fd is not O_APPEND): a group commit under way writes
  // the same bytes at the same place.
  #write(rec: ChainRecord, line: Line | null, sync = true): void {
    if (rec.fd >= 0) {
      this.#writeAt(rec, line, sync);
      return;
    }
    // Closed: this one write opens the file (its old fd number may be another file's by now).
    rec.fd = openAppendable(this.#path(rec.chain));
    try {
      this.#writeAt(rec, line, sync);
    } finally {
      closeSync(rec.fd);
      rec.fd = -1;
    }
  }

  #writeAt(rec: ChainRecord, line: Line | null, sync = true): void {
    const pending = rec.deferred;
    const bytes = Buffer.concat([...pending.map((d) => d.line), ...(line ? [encodeLine(line)] : [])]);
    const at = rec.durable;
    try {
      writeAll(rec.fd, bytes, at);
      // Waiting entries written with it are durable only once fsync'd, whatever the line.
      if (sync || pending.some((d) => d.entry)) fsyncSync(rec.fd);
    } catch (err) {
      rec.epoch++;
      try {
        ftruncateSync(rec.fd, at);
      } catch {
        // The next load cuts a torn last line anyway.
      }
      throw err;
    }
    rec.durable = at + bytes.length;
    rec.size = Math.max(rec.size, rec.durable);
    if (line) rec.lines++;
    this.#settle(rec);
  }

  // Deferred entries whose lines are now durable join the record: their frames may ship.
  #settle(rec: ChainRecord): void {
    let n = 0;
    while (rec.deferred.length && rec.deferred[0]!.end <= rec.durable) {
      const d = rec.deferred.shift()!;
      if (!d.entry) continue;
      this.#apply(rec, d.entry);
      for (const b of d.bodies) this.#store.keep(b);
      n++;
    }
    if (n) this.onDurable();
  }

  #claim(rec: ChainRecord, e: Entry): void {
    if (e.id === undefined) return;
    rec.ids.set(e.id, e.answer ?? {});
    this.#ids.set(e.id, e.answer ?? {});
    if (!e.refused) return;
    rec.refused.add(e.id);
    this.#refused.add(e.id);
  }

  #apply(rec: ChainRecord, e: Entry): void {
    rec.frames.push(...e.frames);
    rec.locks.push(...e.locks);
    rec.bodies.push(...e.bodies);
    for (const f of e.frames) rec.lastT = Math.max(rec.lastT, f.t);
    this.#claim(rec, e);
  }

  #applyAck(rec: ChainRecord, a: Ack): void {
    dropAcked(rec, a);
    for (const sha of a.bodies) {
      if (this.#bodyWanted(sha)) continue;
      this.#store.drop(sha);
    }
  }

  // A waiting entry's bodies join rec.bodies only once its line is durable; until then its group
  // commit may have found the body already on disk (another chain's, the same bytes) and relies on it.
  #bodyWanted(sha: string): boolean {
    for (const rec of this.chains.values()) {
      if (rec.bodies.some((b) => b.sha === sha)) return true;
      if (rec.deferred.some((d) => d.bodies.some((b) => b.sha === sha))) return true;
    }
    return false;
  }

  #collectBodies(): void {
    for (const name of readdirSync(join(this.dir, "bodies"))) {
      if (/^[0-9a-f]{64}$/.test(name) && !this.#bodyWanted(name)) rmSync(join(this.dir, "bodies", name), { force: true });
    }
  }

  #load(chain: string): void {
    const path = this.#path(chain);
    const rec = readChainFile(path, chain, (sha, b64) => this.#store.remember(sha, b64));
    if (!rec) return;
    rec.fd = openAppendable(path);
    this.chains.set(chain, rec);
    for (const [id, answer] of rec.ids) this.#ids.set(id, answer);
    for (const id of rec.refused) this.#refused.add(id);
  }
}
