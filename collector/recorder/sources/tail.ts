import { closeSync, existsSync, fstatSync, openSync, readdirSync, readSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { splitLines, type Line } from "./lines.ts";

const MAX_READ = 8 * 1024 * 1024;

/** What one read of a log file gave: the complete new lines, the offset to resume at, and trouble. */
export interface Read {
  lines: Line[];
  offset: number;
  size: number;
  /** Bytes after the last newline (a line still being written, or a truncated one). */
  tail: number;
  error?: string;
  /** The file is now shorter than what was already read (rewritten or replaced). */
  shrunk?: boolean;
}

/**
 * Reads a log file from a byte offset to its end (opened read-only: the user's file is never
 * written). Stops before a last line that has no newline yet.
 */
export function readFrom(path: string, offset: number): Read {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    return { lines: [], offset, size: 0, tail: 0, error: (err as Error).message };
  }
  try {
    const size = fstatSync(fd).size;
    const shrunk = size < offset;
    let at = shrunk ? 0 : offset;
    const lines: Line[] = [];
    while (at < size) {
      const want = Math.min(MAX_READ, size - at);
      const buf = Buffer.alloc(want);
      const got = readSync(fd, buf, 0, want, at);
      const { lines: more, consumed } = splitLines(buf.subarray(0, got), at);
      lines.push(...more);
      if (consumed === 0) {
        // One line longer than a read: skip it whole rather than stall on it forever.
        if (got === MAX_READ)
          return { lines, offset: at, size, tail: size - at, error: `a line at byte ${at} is longer than ${MAX_READ} bytes` };
        break;
      }
      at += consumed;
    }
    return { lines, offset: at, size, tail: size - at, ...(shrunk ? { shrunk } : {}) };
  } catch (err) {
    return { lines: [], offset, size: 0, tail: 0, error: (err as Error).message };
  } finally {
    closeSync(fd);
  }
}

/** Claude Code's config dir (CLAUDE_CONFIG_DIR, else ~/.claude). */
export function claudeDir(): string {
  return process.env.CLAUDE_CONFIG_DIR || join(homedir(), ".claude");
}

/** Codex's home (CODEX_HOME, else ~/.codex). */
export function codexHome(): string {
  return process.env.CODEX_HOME || join(homedir(), ".codex");
}

/** Stella's data dir (STELLA_DATA_DIR, else ~/.stella). */
export function stellaDataDir(): string {
  return process.env.STELLA_DATA_DIR || join(homedir(), ".stella");
}

/**
 * The journal of the Stella session that started with a recorded session: Stella's hooks carry no
 * session id, so it is the journal under `<data_dir>/sessions/*` written since `since` that no
 * other session follows, the one first written closest after `since`. Two Stella sessions started
 * in the same moment cannot be told apart this way.
 */
export function activeStellaJournal(since: number, taken: ReadonlySet<string>, dir = stellaDataDir()): string | null {
  let best: { path: string; born: number } | null = null;
  let names: string[];
  try {
    names = readdirSync(join(dir, "sessions"));
  } catch {
    return null;
  }
  for (const name of names) {
    const path = join(dir, "sessions", name, "journal.jsonl");
    if (taken.has(path)) continue;
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(path);
    } catch {
      continue;
    }
    const born = st.birthtimeMs > 0 ? st.birthtimeMs : st.ctimeMs;
    if (st.mtimeMs < since || born < since - 60_000) continue;
    if (!best || Math.abs(born - since) < Math.abs(best.born - since)) best = { path, born };
  }
  return best?.path ?? null;
}

/** The rollout file of a Codex session, when its hooks carried no transcript_path: the last few days' folders. */
export function findRollout(sessionId: string, now = Date.now(), home = codexHome()): string | null {
  for (let day = 0; day < 3; day++) {
    const d = new Date(now - day * 86_400_000);
    const dir = join(
      home,
      "sessions",
      String(d.getFullYear()),
      String(d.getMonth() + 1).padStart(2, "0"),
      String(d.getDate()).padStart(2, "0"),
    );
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    const hit = names.find((n) => n.startsWith("rollout-") && n.endsWith(`${sessionId}.jsonl`));
    if (hit) return join(dir, hit);
  }
  return null;
}

/** Subagent transcripts of a Claude Code session (`<session>/subagents/agent-*.jsonl` beside the transcript). */
export function subagentFiles(transcript: string): string[] {
  const dir = join(transcript.replace(/\.jsonl$/, ""), "subagents");
  if (!existsSync(dir)) return [];
  try {
    return readdirSync(dir)
      .filter((n) => n.endsWith(".jsonl"))
      .map((n) => join(dir, n));
  } catch {
    return [];
  }
}

/** Claude Code transcripts modified since `since`: session id (the file name) → path and mtime. */
export function recentTranscripts(since: number, dir = join(claudeDir(), "projects")): Map<string, { path: string; mtime: number }> {
  const out = new Map<string, { path: string; mtime: number }>();
  let projects: string[];
  try {
    projects = readdirSync(dir);
  } catch {
    return out;
  }
  for (const p of projects) {
    let names: string[];
    try {
      names = readdirSync(join(dir, p));
    } catch {
      continue;
    }
    for (const n of names) {
      if (!n.endsWith(".jsonl")) continue;
      try {
        const mtime = statSync(join(dir, p, n)).mtimeMs;
        if (mtime >= since) out.set(n.slice(0, -".jsonl".length), { path: join(dir, p, n), mtime });
      } catch {
        // Deleted between listing and stat.
      }
    }
  }
  return out;
}
