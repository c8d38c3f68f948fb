import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { performance } from "node:perf_hooks";
import { dirname, join } from "node:path";
import { z } from "zod";
import { HostId, Sha256Hex, UpstreamUrl } from "../../protocol/index.ts";
import { ExitError } from "./errors.ts";

/** The collector's state directory (see docs/collector.md). */
export function stateDir(): string {
  return process.env.OXAGEN_HOME || join(homedir(), ".config", "oxagen", "tacho");
}

/** A path inside the state directory. */
export function statePath(...parts: string[]): string {
  return join(stateDir(), ...parts);
}

/**
 * What the state directory keeps for its host besides host.json: it goes with the host (tacho
 * unenroll; a re-enroll with a new token, whose new host begins its own).
 */
export const HOST_STATE = ["policy.json", "journal", "spool", "recorder-status.json", "sources.json", "harness-processes.json"] as const;

/** The recorder's own files in the state directory (its log, pid, socket, last autostart). */
export const RECORDER_FILES = ["recorder.log", "recorder.pid", "recorder.sock", "recorder-autostart"] as const;

/** A base URL the gateway forwards one vendor's calls to on this computer, and where enroll found it. */
export const HostUpstream = z.strictObject({
  url: UpstreamUrl,
  /** `--upstream`, a settings file's key (`<path> env.ANTHROPIC_BASE_URL`) or the environment enroll ran in. */
  from: z.string().min(1),
});
/** One of {@link HostUpstream}. */
export type HostUpstream = z.infer<typeof HostUpstream>;

/** The enrollment, as host.json holds it. */
export const HostConfig = z.strictObject({
  v: z.literal(1),
  host_id: HostId,
  workspace: z.string().min(1),
  server: z.string().url(),
  server_key: z.strictObject({ pub: Sha256Hex, key_id: z.string().regex(/^[0-9a-f]{16}$/) }),
  secret_key: Sha256Hex,
  public_key: Sha256Hex,
  harnesses: z.array(z.string()),
  ports: z.strictObject({ hooks: z.number().int().min(1).max(65535), gateway: z.number().int().min(1).max(65535) }),
  /** The program every command hook runs (real paths of Node and tacho), as enroll wrote and ran it. */
  hook_command: z.string().min(1).optional(),
  enrolled_ms: z.number().int().nonnegative(),
  /** Harnesses whose model calls `tacho enroll --gateway` pointed at the gateway (collector/harnesses/gateway.ts). */
  gateway: z.array(z.string()).optional(),
  /**
   * The developer's own upstream per vendor (a base URL that was in the harness's settings or in
   * the environment enroll ran in, or `--upstream`): the gateway forwards there before the
   * workspace policy's `upstreams` (collector/gateway/model/sink.ts `upstreamOf`).
   */
  upstreams: z.strictObject({ anthropic: HostUpstream.optional(), openai: HostUpstream.optional() }).optional(),
  /**
   * The secret HTTP hooks carry (header `x-oxagen-hook-secret`) so the recorder takes them from
   * this enrollment's harness config only. Absent in host.json files written before it existed:
   * `tacho enroll` adds it (withHookSecret) and the recorder then checks it.
   */
  hook_secret: Sha256Hex.optional(),
  /**
   * Host keys `tacho rotate-key` retired, kept only to lock the chains they began (`chains`) until
   * those end: one key locks a chain from its first lock to its last.
   */
  previous_keys: z
    .array(
      z.strictObject({
        secret_key: Sha256Hex,
        public_key: Sha256Hex,
        key_id: z.string().regex(/^[0-9a-f]{16}$/),
        retired_ms: z.number().int().nonnegative(),
        chains: z.array(z.string()),
      }),
    )
    .optional(),
});
/** One of {@link HostConfig}. */
export type HostConfig = z.infer<typeof HostConfig>;

/** Reads host.json; null when the computer is not enrolled. Throws ExitError when it is unreadable. */
export function readHost(): HostConfig | null {
  let text: string;
  try {
    text = readFileSync(statePath("host.json"), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new ExitError(1, `cannot read ${statePath("host.json")}: ${(err as Error).message}`);
  }
  const parsed = HostConfig.safeParse(safeJson(text));
  if (!parsed.success) throw new ExitError(1, `${statePath("host.json")} is damaged; run tacho enroll again`);
  return parsed.data;
}

/** The directories above the state directory that tacho made when it made the state directory (nearest first). */
const MADE_DIRS = "made-dirs.json";

/** Writes a file in the state directory atomically (see {@link writeFileAtomic}). */
export function writeStateFile(name: string, content: string): void {
  makeStateDir();
  writeFileAtomic(statePath(name), content);
}

// The state directory's parents tacho made (`~/.config`, `~/.config/oxagen`) are noted, so unenroll takes away exactly those.
function makeStateDir(): void {
  const dir = stateDir();
  if (existsSync(dir)) return;
  const made: string[] = [];
  for (let d = dirname(dir); !existsSync(d) && d !== dirname(d); d = dirname(d)) made.push(d);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (made.length) writeFileAtomic(statePath(MADE_DIRS), `${JSON.stringify(made)}\n`);
}

/**
 * Removes the state directory when nothing else is left in it, then the parents tacho made for it
 * while they are empty (for a state directory made before those were noted: the default one's
 * `oxagen` parent); whether the state directory is gone.
 */
export function removeStateDir(): boolean {
  const dir = stateDir();
  let made: string[] = [join(homedir(), ".config", "oxagen")].filter((d) => d === dirname(dir));
  try {
    made = z.array(z.string()).parse(JSON.parse(readFileSync(statePath(MADE_DIRS), "utf8")));
  } catch {}
  rmSync(statePath(MADE_DIRS), { force: true });
  try {
    rmdirSync(dir);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT";
  }
  for (const d of made)
    try {
      rmdirSync(d);
    } catch {
      break; // something else lives there
    }
  return true;
}

/** Writes a file atomically (temp file, fsync'd by writeFileSync's flush, then rename), mode 0600, in a 0700 directory. */
export function writeFileAtomic(path: string, content: string | Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600, flush: true });
  renameSync(tmp, path);
}

/** The enrollment with a hook secret: its own, or a new random one when it has none yet. */
export function withHookSecret(host: HostConfig): HostConfig {
  return host.hook_secret ? host : { ...host, hook_secret: randomBytes(32).toString("hex") };
}

/** Writes host.json (mode 0600). */
export function writeHost(host: HostConfig): void {
  writeStateFile("host.json", `${JSON.stringify(HostConfig.parse(host), null, 2)}\n`);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** How often a running recorder looks at host.json for what a re-enroll changed (its secret, its upstreams). */
export const HOST_CHECK_MS = 1000;

let hostSeen: { path: string; mtime: number; checked: number; host: HostConfig | null } | null = null;

/**
 * host.json as a running recorder sees it: read again when it changed, and looked at (a stat) no
 * more than every {@link HOST_CHECK_MS} unless `now` (every hook and model call asks: a stat each
 * was a few percent of a call). Unreadable or damaged now: the one last read.
 */
export function hostNow(now = false): HostConfig | null {
  const path = statePath("host.json");
  const t = performance.now();
  if (hostSeen?.path === path && !now && t - hostSeen.checked < HOST_CHECK_MS) return hostSeen.host;
  const last = hostSeen?.path === path ? hostSeen : null;
  try {
    const mtime = statSync(path).mtimeMs;
    if (last?.mtime === mtime) last.checked = t;
    else hostSeen = { path, mtime, checked: t, host: readHost() ?? last?.host ?? null };
  } catch {
    // Unreadable or gone now: keep the one we had.
    if (last) last.checked = t;
  }
  return hostSeen?.path === path ? hostSeen.host : null;
}

/** This computer's own upstreams as host.json holds them (a re-enroll may set one: seen within HOST_CHECK_MS). */
export function hostUpstreams(): HostConfig["upstreams"] {
  return hostNow()?.upstreams;
}
