import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../lib/state.ts";

/** The most lines spool/events.jsonl holds (docs/collector.md). */
export const SPOOL_LIMIT = 10_000;

/**
 * Appends one line to spool/events.jsonl (created 0600 in a 0700 directory), fsync'd; false (and
 * spool/dropped bumped) when the spool already holds SPOOL_LIMIT lines. The one writer of spool
 * lines: `tacho hook` offline and the recorder (an HTTP hook it failed to record).
 */
export function appendSpool(dir: string, line: Record<string, unknown>): boolean {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, "events.jsonl");
  const fd = openSync(path, "a+", 0o600);
  try {
    if (countLines(readFileSync(fd)) >= SPOOL_LIMIT) {
      bumpDropped(dir);
      return false;
    }
    const record = `${JSON.stringify(line)}\n`;
    writeSync(fd, record);
    fsyncSync(fd);
    // The recorder may have taken the spool (renamed it to replay it) between our open and our
    // write, and the line would go with the file it already read. Write it again to the new spool:
    // the event id makes the second copy harmless.
    if (!sameFile(fd, path)) {
      const again = openSync(path, "a", 0o600);
      try {
        writeSync(again, record);
        fsyncSync(again);
      } finally {
        closeSync(again);
      }
    }
    return true;
  } finally {
    closeSync(fd);
  }
}

/** A line taken from the spool: its parsed value (null when torn or not an object). */
export interface SpoolLine {
  value: Record<string, unknown> | null;
}

/** The spool taken for replay, and how to finish with it. */
export interface TakenSpool {
  lines: SpoolLine[];
  dropped: number;
  /** Puts `keep` back in the spool (lines that could not be recorded yet), then removes the taken files. */
  done(keep: Record<string, unknown>[]): void;
}

/**
 * Takes the spool for replay: moves spool/events.jsonl aside first (a `tacho hook` that spools
 * meanwhile starts a new file, nothing is lost), and does the same with spool/dropped. A replay
 * file left by a crash is taken again: event ids make that harmless.
 */
export function takeSpool(dir: string): TakenSpool {
  const events = join(dir, "events.jsonl");
  const replaying = join(dir, "replaying.jsonl");
  const dropped = join(dir, "dropped");
  const droppedReplaying = join(dir, "dropped.replaying");
  if (!existsSync(replaying) && existsSync(events)) renameSync(events, replaying);
  if (!existsSync(droppedReplaying) && existsSync(dropped)) renameSync(dropped, droppedReplaying);
  const lines: SpoolLine[] = [];
  if (existsSync(replaying)) {
    for (const text of readFileSync(replaying, "utf8").split("\n")) {
      if (!text.trim()) continue;
      let value: unknown = null;
      try {
        value = JSON.parse(text);
      } catch {
        // A torn line is one `tacho hook` never finished writing (and never answered from).
      }
      lines.push({
        value: value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null,
      });
    }
  }
  return {
    lines,
    dropped: readCount(droppedReplaying),
    done: (keep) => {
      for (const line of keep) appendSpool(dir, line);
      rmSync(replaying, { force: true });
      rmSync(droppedReplaying, { force: true });
    },
  };
}

/** True when there is anything to replay: a spool, or a replay a crash left behind. */
export function spoolWaiting(dir: string): boolean {
  return existsSync(join(dir, "events.jsonl")) || existsSync(join(dir, "replaying.jsonl")) || existsSync(join(dir, "dropped"));
}

/** What waits in the spool, per harness or agent label: events and the oldest spooled time; and the dropped count. */
export interface SpoolSummary {
  events: number;
  dropped: number;
  oldest_ms: number | null;
  by_label: Record<string, { events: number; oldest_ms: number | null }>;
}

/** Counts what the spool holds (both the spool and a replay in progress). */
export function spoolSummary(dir: string): SpoolSummary {
  const out: SpoolSummary = { events: 0, dropped: readCount(join(dir, "dropped")), oldest_ms: null, by_label: {} };
  for (const name of ["replaying.jsonl", "events.jsonl"]) {
    let text: string;
    try {
      text = readFileSync(join(dir, name), "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      let v: { harness?: unknown; agent?: unknown; spooled_ms?: unknown } = {};
      try {
        v = JSON.parse(line) as typeof v;
      } catch {}
      const label = typeof v.harness === "string" ? v.harness : typeof v.agent === "string" ? v.agent : "unknown";
      const t = typeof v.spooled_ms === "number" ? v.spooled_ms : null;
      const entry = out.by_label[label] ?? { events: 0, oldest_ms: null };
      out.by_label[label] = entry;
      entry.events++;
      out.events++;
      if (t !== null) {
        entry.oldest_ms = Math.min(entry.oldest_ms ?? t, t);
        out.oldest_ms = Math.min(out.oldest_ms ?? t, t);
      }
    }
  }
  return out;
}

function sameFile(fd: number, path: string): boolean {
  try {
    const open = fstatSync(fd);
    const named = statSync(path);
    return open.ino === named.ino && open.dev === named.dev;
  } catch {
    return false;
  }
}

function countLines(text: Buffer): number {
  let n = 0;
  for (let i = text.indexOf(10); i !== -1; i = text.indexOf(10, i + 1)) n++;
  return n;
}

function readCount(path: string): number {
  try {
    const n = Number.parseInt(readFileSync(path, "utf8").trim(), 10);
    return Number.isFinite(n) && n > 0 ? n : 0;
  } catch {
    return 0;
  }
}

function bumpDropped(dir: string): void {
  const path = join(dir, "dropped");
  writeFileAtomic(path, `${readCount(path) + 1}\n`);
}
