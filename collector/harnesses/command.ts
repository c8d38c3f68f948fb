import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TACHO_BIN } from "../lib/self.ts";
import type { EntriesHost } from "./types.ts";

const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** One word for a POSIX shell: as is when it needs no quoting, else single-quoted. */
export function shellQuote(word: string): string {
  return SAFE.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * The program every command hook runs: the Node running this tacho and this tacho's bin, both
 * resolved to real paths, so the hook needs nothing from the harness's PATH. TACHO_HOOK_COMMAND
 * overrides it (a pinned install path); enroll runs whichever it writes before writing it.
 */
export function hookProgram(): string {
  const pinned = process.env.TACHO_HOOK_COMMAND;
  if (pinned) return pinned;
  return [realpathSync(process.execPath), realpathSync(TACHO_BIN)].map(shellQuote).join(" ");
}

/** The command a harness's hook entry runs for it. */
export function hookCommand(host: EntriesHost, harness: string): string {
  return `${host.hook_command ?? "tacho"} hook --harness ${harness}`;
}

const WORD = String.raw`(?:[A-Za-z0-9_@%+=:,./-]+|'(?:[^']|'\\'')*')`;
const PLAIN = new RegExp(`^${WORD}(?: ${WORD})* hook(?: --harness [a-z-]+)?(?: >/dev/null)?$`);

/**
 * True for a command of the form enroll writes: words (plain or single-quoted), then
 * `hook [--harness NAME]`. Only such a command is run to check it; anything with other shell syntax
 * in it is reported, never run, by tacho status.
 */
export function isPlainHookCommand(command: string): boolean {
  return PLAIN.test(command);
}

/** Why a command's program cannot serve as a hook for long, or null (npx's cache is pruned by npm). */
export function transientInstall(program: string): string | null {
  if (/[/\\]_npx[/\\]/.test(program))
    return "tacho is running from npx's cache, which npm may delete at any time; install it (npm install -g ./dist/oxagen-collector-<version>.tgz) and run it from there";
  return null;
}

/** What running a hook command once showed. */
export interface ProbeResult {
  ok: boolean;
  /** Why it cannot run (when not ok). */
  problem?: string;
  /** The Node it ran on. */
  node?: string;
}

function readReport(path: string): { ok?: unknown; problem?: unknown; node?: unknown } | null {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as { ok?: unknown; problem?: unknown; node?: unknown };
  } catch {
    return null;
  }
}

/**
 * Runs a hook command once the way a harness does (`/bin/sh -c`), with an empty PATH, and with
 * TACHO_HOOK_PROBE so that tacho reports what ran and records nothing.
 */
export function probeHookCommand(command: string, env: NodeJS.ProcessEnv = process.env): ProbeResult {
  const dir = mkdtempSync(join(tmpdir(), "tacho-probe-"));
  const report = join(dir, "probe.json");
  try {
    const r = spawnSync("/bin/sh", ["-c", command], {
      env: { ...env, PATH: "", TACHO_HOOK_PROBE: report },
      input: "",
      encoding: "utf8",
      timeout: 15_000,
    });
    const ran = readReport(report);
    if (ran?.ok === true) return { ok: true, node: String(ran.node) };
    if (ran && typeof ran.problem === "string") return { ok: false, problem: ran.problem, node: String(ran.node) };
    const said = `${r.stderr ?? ""}`.trim().split("\n").filter(Boolean).slice(-2).join(" / ");
    const how = r.error ? r.error.message : r.signal ? `was killed by ${r.signal}` : `exited ${r.status}`;
    return { ok: false, problem: `from a shell with an empty PATH it ${how}${said ? `: ${said}` : ""}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
