import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { parseObject } from "../../lib/json.ts";
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

/**
 * The session id a Claude Code 2.0 subagent transcript (`agent-<id>.jsonl` beside the session's
 * transcript) belongs to: the `sessionId` of its first line (read from the first 16 KiB; a key
 * outside any string is the only place `"sessionId":"` can occur unescaped). Undefined while the
 * file has none yet.
 */
function agentFileSession(path: string): string | undefined {
  let head: string;
  try {
    const fd = openSync(path, "r");
    try {
      const buf = Buffer.alloc(16 * 1024);
      head = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  const first = head.indexOf("\n") >= 0 ? parseObject(head.slice(0, head.indexOf("\n"))) : null;
  if (typeof first?.sessionId === "string") return first.sessionId;
  return /"sessionId":"([^"\\]{1,256})"/.exec(head)?.[1];
}

/**
 * Subagent transcripts of Claude Code sessions, in both layouts: 2.1's
 * `<session>/subagents/agent-*.jsonl` (compaction calls among them, as `agent-acompact-*`) and
 * 2.0's `agent-*.jsonl` beside the session transcript, which name their session only inside. A
 * project folder holds every session's 2.0 files, so it is listed again only when a file was added
 * to it (its mtime changed) or a file's session was not written yet, and each file is opened once.
 */
export class SubagentFinder {
  /** A 2.0 agent file → its session. */
  readonly #owners = new Map<string, string>();
  /** A project folder → its mtime at the last complete listing, and the 2.0 agent files it held. */
  readonly #folders = new Map<string, { mtime: number; agents: string[] }>();

  find(transcript: string): string[] {
    const session = basename(transcript, ".jsonl");
    const sub = join(dirname(transcript), session, "subagents");
    const out = list(sub)
      .filter((n) => n.endsWith(".jsonl"))
      .map((n) => join(sub, n));
    for (const path of this.#agents(dirname(transcript))) if (this.#owners.get(path) === session) out.push(path);
    return out;
  }

  #agents(folder: string): string[] {
    let mtime: number;
    try {
      mtime = statSync(folder).mtimeMs;
    } catch {
      return [];
    }
    const seen = this.#folders.get(folder);
    if (seen?.mtime === mtime) return seen.agents;
    const agents = list(folder)
      .filter((n) => n.startsWith("agent-") && n.endsWith(".jsonl"))
      .map((n) => join(folder, n));
    let complete = true;
    for (const path of agents) {
      if (this.#owners.has(path)) continue;
      const owner = agentFileSession(path);
      if (owner === undefined) complete = false;
      else this.#owners.set(path, owner);
    }
    if (complete) this.#folders.set(folder, { mtime, agents });
    else this.#folders.delete(folder);
    if (this.#owners.size > 100_000) this.#owners.clear();
    return agents;
  }
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
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
      // Claude Code 2.0 writes a subagent's transcript as agent-<id>.jsonl beside its session's: not a session.
      if (!n.endsWith(".jsonl") || n.startsWith("agent-")) continue;
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
