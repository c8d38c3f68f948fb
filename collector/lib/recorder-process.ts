import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, realpathSync } from "node:fs";
import { connect } from "node:net";
import { resolve } from "node:path";
import { atSocket } from "./channel.cjs";
import { freshBundle } from "./bundle.ts";
import { ExitError } from "./errors.ts";
import { alive } from "./pid.ts";
import { TACHO_BIN } from "./self.ts";
import { stateDir, statePath } from "./state.ts";

/** How the recorder is started: the program and its arguments, the environment it needs, its log. */
export interface RecorderLaunch {
  argv: string[];
  env: Record<string, string>;
  log: string;
}

/**
 * This Node and this tacho, resolved to real paths (a login service runs them with no PATH), from
 * the built bundle when it is current. The young generation may grow to 16 MB (V8 starts it small
 * and grows it only under allocation): capped at 1 MB, the gateway's calls under load survived into
 * the old generation and garbage collection took 28-30 % of the recorder's busy time (11-16 % at
 * 16 MB), for no lower idle RSS (bench:gateway: 107-113 MB either way). No forced collections: a
 * full GC every 5 s dropped the optimized code of 16-63 hot functions each time, compiled again
 * under the next calls (about a tenth of the gateway's CPU per call), and left the idle RSS no
 * lower than V8's own memory reducer does (docs/collector.md, "Budget reservations", **Cost**).
 */
export function recorderLaunch(): RecorderLaunch {
  const entry = freshBundle() ?? realpathSync(TACHO_BIN);
  return {
    argv: [realpathSync(process.execPath), "--max-semi-space-size=16", entry, "daemon", "run"],
    env: { OXAGEN_HOME: resolve(stateDir()) },
    log: statePath("recorder.log"),
  };
}

/** Starts `tacho daemon run` detached: its own session, output to recorder.log, working directory the state directory. */
export function spawnRecorder(): ChildProcess {
  const dir = resolve(stateDir());
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const launch = recorderLaunch();
  const log = openSync(launch.log, "a", 0o600);
  try {
    const [node, ...args] = launch.argv;
    const child = spawn(node!, args, { detached: true, cwd: dir, stdio: ["ignore", log, log], env: { ...process.env, ...launch.env } });
    child.unref();
    return child;
  } finally {
    closeSync(log);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts the recorder unless it already answers on its socket, and waits until the new one does. */
export async function startRecorder(): Promise<{ pid: number; started: boolean }> {
  // The recorder is asked on its own socket: whatever else listens on the hook port is not it.
  const running = await recorderHealth();
  if (running) return { pid: running.pid, started: false };
  const child = spawnRecorder();
  for (let i = 0; i < 100; i++) {
    const health = await recorderHealth();
    if (health && health.pid === child.pid) return { pid: health.pid, started: true };
    if (child.exitCode !== null || !alive(child.pid!)) break;
    await sleep(100);
  }
  throw new ExitError(1, `tacho daemon: the recorder did not come up; see ${statePath("recorder.log")}`);
}

/** What the recorder reports about itself on its socket (`{"v":1,"op":"health"}`). */
export interface RecorderHealth {
  ok: true;
  v: 1;
  pid: number;
  port: number;
  started_ms: number;
  /** Whether the HTTP hook port is bound (a stranger may hold it). */
  http: "listening" | "unavailable";
  /** Why it is unavailable (another program on the port). */
  http_error?: string;
  gateway_port?: number;
  gateway?: "listening" | "unavailable";
  gateway_error?: string;
  /** Both ports were tried once (before that, "unavailable" only means "not yet"). */
  bound?: boolean;
}

/** Asks this enrollment's recorder for its health over its socket; null when none answers in time. */
export function recorderHealth(timeoutMs = 1000): Promise<RecorderHealth | null> {
  return new Promise((resolveHealth) => {
    let text = "";
    let done = false;
    const socket = atSocket(resolve(stateDir()), (path) => connect({ path }));
    const finish = (value: RecorderHealth | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolveHealth(value);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`${JSON.stringify({ v: 1, op: "health" })}\n`));
    socket.on("data", (chunk: string) => {
      text += chunk;
      const end = text.indexOf("\n");
      if (end < 0) return;
      try {
        const reply = JSON.parse(text.slice(0, end)) as { v?: unknown; health?: RecorderHealth };
        finish(reply.v === 1 && reply.health?.ok === true ? reply.health : null);
      } catch {
        finish(null);
      }
    });
    socket.on("error", () => finish(null));
    socket.on("close", () => finish(null));
  });
}
