// Finds the harness process a hook runs under (Stella runs each hook as `bash -c <command>` and
// sends no session id, so its session is derived from that process). Plain JS, node: built-ins only.
const { readFileSync } = process.getBuiltinModule("node:fs");

// Launchers between the harness and this process: shells, env, and a Node shim for `tacho`.
const LAUNCHERS = new Set(["sh", "bash", "dash", "zsh", "ksh", "fish", "env", "node", "tacho", "npx", "npm", "timeout", "nice"]);
const MAX_DEPTH = 12;

/** @typedef {{ comm: string; ppid: number; start: string }} ProcStat */

/**
 * `{ comm, ppid, start }` of a process from /proc (Linux), or null.
 * @param {number} pid
 * @returns {ProcStat | null}
 */
function procStat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const open = text.indexOf("(");
    const close = text.lastIndexOf(")");
    const fields = text.slice(close + 2).split(" ");
    return { comm: text.slice(open + 1, close), ppid: Number(fields[1]), start: fields[19] ?? "" };
  } catch {
    return null;
  }
}

/**
 * @param {number} pid
 * @returns {Promise<ProcStat | null>}
 */
async function psStat(pid) {
  try {
    const { execFileSync } = await import("node:child_process");
    const out = execFileSync("ps", ["-o", "ppid=", "-o", "lstart=", "-o", "comm=", "-p", String(pid)], {
      encoding: "utf8",
      timeout: 500,
    }).trim();
    const m = /^(\d+)\s+(\S+\s+\S+\s+\d+\s+[\d:]+\s+\d+)\s+(.+)$/.exec(out);
    if (!m) return null;
    const comm = m[3]?.split("/").pop() ?? "";
    return { comm, ppid: Number(m[1]), start: (m[2] ?? "").replace(/\s+/g, "_") };
  } catch {
    return null;
  }
}

/**
 * Walks up from this process's parent to the harness: the first ancestor whose name contains
 * `name`, else the first one that is not a launcher. Returns `{ pid, start }` (start: the kernel's
 * start time, so a reused pid is not taken for the same process), or null when none is found.
 * @param {string} name
 * @returns {Promise<{ pid: number; start: string } | null>}
 */
export async function harnessProcess(name) {
  const linux = process.platform === "linux";
  let pid = process.ppid;
  let fallback = null;
  for (let depth = 0; depth < MAX_DEPTH && pid > 1; depth++) {
    const stat = linux ? procStat(pid) : await psStat(pid);
    if (!stat) break;
    const comm = stat.comm.toLowerCase();
    if (comm.includes(name)) return { pid, start: stat.start };
    if (!fallback && !LAUNCHERS.has(comm)) fallback = { pid, start: stat.start };
    pid = stat.ppid;
  }
  return fallback;
}

/**
 * The start time of a live process as harnessProcess reports it; null when it is gone or unknown.
 * @param {number} pid
 * @returns {string | null}
 */
export function processStart(pid) {
  return procStat(pid)?.start ?? null;
}
