import { closeSync, fsync as fsyncCb } from "node:fs";
import { promisify } from "node:util";
import { type BodyBytes, BodyStore, writeAsync, writevAsync } from "./body-store.ts";
import type { ChainRecord, Entry } from "./codec.ts";

/** Deferred entries a chain may hold (a disk that keeps failing): past it, an entry is written at once, and its failure seen. */
export const MAX_DEFERRED = 1024;

const fsyncAsync = promisify(fsyncCb);

/** What a group commit needs of the journal. */
export interface GroupCommitHost {
  closed(): boolean;
  chains(): Iterable<ChainRecord>;
  /** The chain's lines up to `rec.durable` are durable now: its waiting entries there join the record. */
  settle(rec: ChainRecord): void;
  onError(err: Error): void;
}

/**
 * The gateway's deferred entries (their client has its answer already): each takes its place in
 * its chain now, and becomes durable with every other deferred entry of the moment in one write and
 * one fsync of the chain's file on the threadpool, off the event loop (docs/collector.md, "The
 * journal"). Any synchronous write to a chain writes its waiting lines first (Journal), so the file
 * keeps the chain's order and a lock never covers a frame that is not durable.
 */
export class GroupCommit {
  readonly #host: GroupCommitHost;
  #scheduled = false;

  constructor(host: GroupCommitHost) {
    this.#host = host;
  }

  /** Whether an entry may wait for a group commit now (not once the journal closed, not past MAX_DEFERRED). */
  accepts(rec: ChainRecord): boolean {
    return !this.#host.closed() && rec.deferred.length < MAX_DEFERRED;
  }

  /** Queues an entry's line, after its bodies' lines (same write, same fsync: no file and no fsync each). */
  defer(rec: ChainRecord, entry: Entry, line: Buffer, bodies: BodyBytes[]): void {
    // Body lines are ASCII: one byte a character, written into the entry's buffer with no copy between.
    const text = bodies.map(BodyStore.line).join("");
    const bytes = text ? Buffer.allocUnsafe(text.length + line.length) : line;
    if (text) {
      bytes.write(text, 0, "latin1");
      line.copy(bytes, text.length);
    }
    rec.size += bytes.length;
    // Body lines are not entries: they do not bring a compaction nearer.
    rec.lines++;
    rec.deferred.push({ end: rec.size, line: bytes, entry, bodies });
    for (const f of entry.frames) rec.lastT = Math.max(rec.lastT, f.t);
    this.schedule();
  }

  /**
   * Queues a line that needs no fsync of its own (an ack) behind the chain's waiting entries: it
   * goes in their group commit instead of writing and fsyncing them on the event loop now.
   */
  trail(rec: ChainRecord, line: Buffer): void {
    rec.size += line.length;
    rec.lines++;
    rec.deferred.push({ end: rec.size, line, entry: null, bodies: [] });
    this.schedule();
  }

  schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      // Closed: its fds may already be another file's.
      if (this.#host.closed()) return;
      for (const rec of this.#host.chains()) if (rec.deferred.length && !rec.flushing) void this.#flush(rec);
    });
  }

  // One group commit of a chain: every deferred line so far in one write, one fsync, on the
  // threadpool. Entries deferred meanwhile go in the next one.
  async #flush(rec: ChainRecord): Promise<void> {
    rec.flushing = true;
    const end = rec.deferred.at(-1)!.end;
    const epoch = rec.epoch;
    let failed: Error | null = null;
    try {
      // A synchronous write may have made some (or all) of them durable meanwhile.
      const todo = rec.deferred.filter((d) => d.end <= end);
      if (todo.length && rec.epoch === epoch) {
        const at = rec.durable;
        const lines = todo.map((d) => d.line);
        const length = lines.reduce((n, l) => n + l.length, 0);
        // One writev of the lines as they are; a short write goes on from where it stopped.
        let off = (await writevAsync(rec.fd, lines, at)).bytesWritten;
        if (off < length) {
          const bytes = Buffer.concat(lines);
          while (off < length) off += (await writeAsync(rec.fd, bytes, off, length - off, at + off)).bytesWritten;
        }
        // Acks alone need no fsync (a crash that loses one only ships its frames again).
        if (todo.some((d) => d.entry)) await fsyncAsync(rec.fd);
        if (rec.epoch === epoch && rec.durable < at + length) {
          rec.durable = at + length;
          this.#host.settle(rec);
        }
      }
    } catch (err) {
      failed = err as Error;
    }
    rec.flushing = false;
    if (this.#host.closed()) {
      // Closed meanwhile: the journal left this chain's fd to this group commit to close.
      closeSync(rec.fd);
      rec.fd = -1;
      return;
    }
    if (failed) {
      this.#host.onError(
        new Error(`journal ${rec.chain}: group commit failed (retried every second): ${failed.message}`, { cause: failed }),
      );
      setTimeout(() => this.schedule(), 1000).unref();
    } else if (rec.deferred.length) this.schedule();
  }
}

/**
 * Completes, in order and on this thread, the chain's entries still being prepared: all of them,
 * or (`readyOnly`, when a worker answered) those at the head whose frames are ready.
 */
export function readyPrepared(rec: ChainRecord, readyOnly = false): void {
  while (rec.preparing.length && (!readyOnly || rec.preparing[0]!.prepared)) {
    const n = rec.preparing.length;
    rec.preparing[0]!.complete();
    // A completion that failed to remove itself must not spin.
    if (rec.preparing.length === n) rec.preparing.shift();
  }
}
