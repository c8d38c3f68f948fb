import { spawnSync } from "node:child_process";
import { openSync, readSync, closeSync, fstatSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex, utf8, type Payload } from "../../protocol/index.ts";
import { redact } from "../../protocol/redact.ts";

type Reconciled = Payload<"oxagen:worktree_reconciled">;
type Changed = Reconciled["changed"][number];

export const MAX_PATHS = 10_000;
/** Characters of a frame's payload the changed paths may take (escaping counted at worst). */
const CHANGED_BUDGET = 40_000;
/** Commits that fit in the rest of a payload (each about 150 characters). */
const COMMITS_FIT = 100;
const MAX_COMMITS = 1000;
const MAX_COUNT_BYTES = 8 * 1024 * 1024;

/** Runs git in `cwd`; the output, or null when git fails (not a repo, no HEAD yet, git missing). */
function git(cwd: string, args: string[]): string | null {
  const r = spawnSync("git", ["-c", "core.quotepath=off", ...args], {
    cwd,
    encoding: "utf8",
    timeout: 10_000,
    maxBuffer: 64 * 1024 * 1024,
    // A reconciliation must not take git's index lock or prompt.
    env: { ...process.env, GIT_OPTIONAL_LOCKS: "0", GIT_TERMINAL_PROMPT: "0" },
  });
  return r.status === 0 && typeof r.stdout === "string" ? r.stdout : null;
}

/** The worktree a session works in (`git rev-parse --show-toplevel` of its cwd); null outside git. */
export function worktreeOf(cwd: string): string | null {
  return git(cwd, ["rev-parse", "--show-toplevel"])?.trim() || null;
}

/** The worktree's HEAD commit; null before its first commit. */
export function headOf(root: string): string | null {
  const h = git(root, ["rev-parse", "--verify", "-q", "HEAD"])?.trim();
  return h && /^[0-9a-f]{40,64}$/.test(h) ? h : null;
}

/** Parses `git status --porcelain=v1 -z`: path and status per entry (renames name the new path). */
export function parseStatus(out: string): { file: string; status: Changed["status"] }[] {
  const parts = out.split("\0");
  const entries: { file: string; status: Changed["status"] }[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (p.length < 4) continue;
    const xy = p.slice(0, 2);
    const file = p.slice(3);
    let status: Changed["status"];
    if (xy === "??") status = "untracked";
    else if (xy.includes("R")) status = "renamed";
    else if (xy.includes("D")) status = "deleted";
    else if (xy.includes("A")) status = "added";
    else if (xy.includes("M") || xy.includes("T")) status = "modified";
    else status = "other";
    // A rename or copy is followed by its source path.
    if (xy.includes("R") || xy.includes("C")) i++;
    if (xy === "!!") continue;
    entries.push({ file, status });
  }
  return entries;
}

/** Parses `git diff --numstat -z`: added/removed lines per path (binary files have none). */
export function parseNumstat(out: string): Map<string, { added?: number; removed?: number }> {
  const map = new Map<string, { added?: number; removed?: number }>();
  const parts = out.split("\0");
  for (let i = 0; i < parts.length; i++) {
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(parts[i]!);
    if (!m) continue;
    let file = m[3]!;
    // A rename: an empty path field, then the source and destination paths.
    if (file === "") {
      file = parts[i + 2] ?? "";
      i += 2;
    }
    map.set(file, m[1] === "-" ? {} : { added: Number(m[1]), removed: Number(m[2]) });
  }
  return map;
}

/** An untracked file's line count; undefined for a binary, unreadable or very large file. */
function lineCount(path: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return undefined;
  }
  try {
    const size = fstatSync(fd).size;
    if (size > MAX_COUNT_BYTES) return undefined;
    const buf = Buffer.alloc(size);
    readSync(fd, buf, 0, size, 0);
    if (buf.includes(0)) return undefined;
    let n = 0;
    for (const b of buf) if (b === 0x0a) n++;
    return size > 0 && buf[size - 1] !== 0x0a ? n + 1 : n;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * What changed in a session's worktree: every path git reports as changed (ignored files are not
 * listed by git status; paths outside the worktree cannot be), with line counts against HEAD,
 * and the commits made since `baseHead` (the HEAD first seen for the session), subjects as hashes.
 */
export function reconcile(root: string, baseHead: string | null, final = false): Reconciled | null {
  const status = git(root, ["status", "--porcelain=v1", "-z", "--untracked-files=all"]);
  if (status === null) return null;
  const head = headOf(root);
  const entries = parseStatus(status);
  const counts = head ? parseNumstat(git(root, ["diff", "--numstat", "-z", "HEAD"]) ?? "") : new Map();
  const changed: Changed[] = [];
  // A frame payload is at most 64 KiB: paths and commits each get a share, and what does not fit
  // is left out with `truncated: true` (a frame the server would refuse would stop the chain's upload).
  let room = CHANGED_BUDGET;
  let cut = entries.length > MAX_PATHS;
  for (const e of entries.slice(0, MAX_PATHS)) {
    if (e.file.length > 4096) continue;
    room -= e.file.length * 2 + 64;
    if (room < 0) {
      cut = true;
      break;
    }
    const c: Changed = { file: e.file, status: e.status };
    const lines = e.status === "untracked" ? { added: lineCount(join(root, e.file)) } : counts.get(e.file);
    if (lines?.added !== undefined) c.added = lines.added;
    if (lines && "removed" in lines && lines.removed !== undefined) c.removed = lines.removed;
    changed.push(c);
  }
  const commits: Reconciled["commits"] = [];
  if (head && baseHead && head !== baseHead) {
    const log = git(root, ["log", `-n${MAX_COMMITS}`, "--format=%H%x00%s", `${baseHead}..${head}`]) ?? "";
    for (const line of log.split("\n")) {
      const [sha, raw = ""] = line.split("\0");
      // Redacted before hashing, like every body: a credential never reaches a hash.
      const subject = redact(raw.toWellFormed()).text;
      if (commits.length >= COMMITS_FIT) {
        cut = true;
        break;
      }
      if (sha && /^[0-9a-f]{40,64}$/.test(sha)) commits.push({ sha, subject: { sha256: sha256Hex(subject), size: utf8(subject).length } });
    }
  }
  return {
    path: "worktree",
    root: root.slice(0, 4096),
    ...(head ? { head } : {}),
    changed,
    commits,
    ...(cut ? { truncated: true as const } : {}),
    ...(final ? { final: true as const } : {}),
  };
}
