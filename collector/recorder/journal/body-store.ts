import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { close as closeCb, open as openCb, rename as renameCb, write as writeCb, writev as writevCb } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { sha256Hex } from "../../../protocol/index.ts";

/** The most body bytes kept in memory only (durable in body lines) before they are written to their files too. */
export const MAX_INFLIGHT_BODY_BYTES = 64 * 1024 * 1024;

/** A body's bytes an entry makes durable with it. */
export interface BodyBytes {
  sha: string;
  bytes: Uint8Array;
}

/**
 * The bodies waiting to ship, under journal/bodies/ by sha256 (docs/collector.md, "The journal").
 * A hook's body is a file, fsync'd before the hook is answered ({@link put}). A gateway entry's body
 * is made durable as a body line in its chain file, in the entry's group commit ({@link line}); it
 * is then kept in memory for the shipper ({@link keep}) and written to its file, without an fsync
 * of its own, only when memory holds too much, at stop ({@link writeAll}), or at the next start
 * ({@link restore}, which writes again a file a crash left missing or torn). A compaction writes
 * its line again after the snapshot ({@link lineOf}).
 */
export class BodyStore {
  readonly #dir: string;
  readonly #onError: (err: Error) => void;
  readonly #inflight = new Map<string, Uint8Array>();
  #inflightBytes = 0;
  /** Files written without an fsync: their durable copy is a body line, until a compaction drops it. */
  readonly #unsynced = new Set<string>();
  /** Body lines read back at start, by sha. */
  #lines = new Map<string, string>();
  #writing = 0;
  #tmp = 0;

  constructor(dir: string, onError: (err: Error) => void) {
    this.#dir = dir;
    this.#onError = onError;
  }

  /** File writes under way. */
  get busy(): boolean {
    return this.#writing > 0;
  }

  #path(sha: string): string {
    return join(this.#dir, sha);
  }

  /** Writes a body to ship (idempotent; content-addressed) and fsyncs it. */
  put(sha: string, bytes: Uint8Array): void {
    const path = this.#path(sha);
    if (existsSync(path)) return;
    const tmp = `${path}.${++this.#tmp}.tmp`;
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  }

  get(sha: string): Buffer | null {
    const inflight = this.#inflight.get(sha);
    if (inflight) return Buffer.from(inflight);
    try {
      return readFileSync(this.#path(sha));
    } catch {
      return null;
    }
  }

  /**
   * The body line of a gateway entry's body, for its chain file (ASCII only). The JSON of
   * `{ k: "body", sha, b64 }`, written out: base64 needs no escaping, and the bytes are not copied.
   */
  static line(b: BodyBytes): string {
    const b64 = Buffer.from(b.bytes.buffer, b.bytes.byteOffset, b.bytes.byteLength).toString("base64");
    return `{"k":"body","sha":${JSON.stringify(b.sha)},"b64":"${b64}"}\n`;
  }

  /** A body line read back at start (see {@link restore}). */
  remember(sha: string, b64: string): void {
    this.#lines.set(sha, b64);
  }

  /** After start: each pending body whose durable copy is a body line gets its file back if a crash lost or tore it. */
  restore(pending: Iterable<string>): void {
    for (const sha of pending) {
      const b64 = this.#lines.get(sha);
      if (b64 === undefined) continue;
      const have = this.get(sha);
      if (have && sha256Hex(have) === sha) this.#unsynced.add(sha);
      else {
        rmSync(this.#path(sha), { force: true });
        this.put(sha, Buffer.from(b64, "base64"));
      }
    }
    this.#lines = new Map();
  }

  /** A body now durable in a body line: in memory for the shipper, or (memory full) written to its file. */
  keep(b: BodyBytes): void {
    if (this.#inflight.has(b.sha)) return;
    if (this.#inflightBytes + b.bytes.length > MAX_INFLIGHT_BODY_BYTES) {
      void this.#writeFile(b);
      return;
    }
    this.#inflight.set(b.sha, b.bytes);
    this.#inflightBytes += b.bytes.length;
  }

  /** The body shipped (and no entry wants it): gone from memory and disk. */
  drop(sha: string): void {
    // Held in memory and never written: there is no file to remove.
    if (this.#forget(sha) && !this.#unsynced.has(sha)) return;
    this.#unsynced.delete(sha);
    rmSync(this.#path(sha), { force: true });
  }

  /**
   * The body line a compaction writes again for a body whose durable copy is one (held in memory, or
   * a file written without an fsync); null for a body whose file was fsync'd (a hook's).
   */
  lineOf(sha: string): string | null {
    const bytes = this.#inflight.get(sha) ?? (this.#unsynced.has(sha) ? this.get(sha) : null);
    return bytes ? BodyStore.line({ sha, bytes }) : null;
  }

  /** Every body held in memory written to its file (at stop, before the files are read back); their lines stay their durable copy. */
  writeAll(): void {
    for (const [sha, bytes] of this.#inflight) {
      const path = this.#path(sha);
      if (!existsSync(path)) {
        const tmp = `${path}.${++this.#tmp}.tmp`;
        writeFileSync(tmp, bytes, { mode: 0o600 });
        renameSync(tmp, path);
        this.#unsynced.add(sha);
      }
      this.#forget(sha);
    }
  }

  /** Whether it was held in memory. */
  #forget(sha: string): boolean {
    const bytes = this.#inflight.get(sha);
    if (!bytes) return false;
    this.#inflight.delete(sha);
    this.#inflightBytes -= bytes.length;
    return true;
  }

  async #writeFile(b: BodyBytes): Promise<void> {
    const path = this.#path(b.sha);
    this.#writing++;
    try {
      if (existsSync(path)) return;
      const tmp = `${path}.${++this.#tmp}.tmp`;
      const fd = await openAsync(tmp, "w", 0o600);
      try {
        let off = 0;
        while (off < b.bytes.length) off += (await writeAsync(fd, b.bytes, off, b.bytes.length - off, off)).bytesWritten;
      } finally {
        await closeAsync(fd);
      }
      await renameAsync(tmp, path);
      this.#unsynced.add(b.sha);
    } catch (err) {
      // Its body line is its durable copy: the file is written again at the next start.
      this.#onError(new Error(`journal: body ${b.sha.slice(0, 12)} not written to its file: ${(err as Error).message}`));
    } finally {
      this.#writing--;
    }
  }
}

const openAsync = promisify(openCb);
/** `fs.writev` at a position, as a promise. */
export const writevAsync = promisify(writevCb) as (fd: number, b: Buffer[], pos: number) => Promise<{ bytesWritten: number }>;
/** `fs.write` at a position, as a promise. */
export const writeAsync = promisify(writeCb) as (
  fd: number,
  b: Uint8Array,
  off: number,
  len: number,
  pos: number,
) => Promise<{ bytesWritten: number }>;
const closeAsync = promisify(closeCb);
const renameAsync = promisify(renameCb);

export function fsyncDir(dir: string): void {
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
