import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, openSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { freshBundle } from "../../lib/bundle.ts";
import { alive, readPid } from "../../lib/pid.ts";
import { TACHO_BIN } from "../../lib/self.ts";
import { readHost, stateDir, statePath, type HostConfig } from "../../lib/state.ts";
import { serviceCommands, serviceFile, type RecorderLaunch } from "./service.ts";

export const USAGE = `usage: tacho daemon start|stop|status|run|install|uninstall [--json]

  start       starts the recorder in the background (tacho enroll does this too)
  stop        stops it
  status      says whether it runs and answers on the hook port (exit 3 when not)
  run         runs it in the foreground (what a login service runs)
  install     writes a login service that starts the recorder at login and restarts it when it
              fails (a systemd user unit on Linux, a launchd agent on macOS), and starts it now
  uninstall   stops that service and removes its file`;

/** How the recorder is started: this Node, a small young generation and explicit GC when idle (low memory), this tacho. */
export function recorderLaunch(): RecorderLaunch {
  const entry = freshBundle() ?? realpathSync(TACHO_BIN);
  const env: Record<string, string> = { OXAGEN_HOME: stateDir() };
  return {
    argv: [realpathSync(process.execPath), "--max-semi-space-size=1", "--expose-gc", entry, "daemon", "run"],
    env,
    log: statePath("recorder.log"),
  };
}

function enrolled(): HostConfig {
  const host = readHost();
  if (!host) throw new ExitError(1, `tacho daemon: this computer is not enrolled (no ${statePath("host.json")}); run tacho enroll first`);
  return host;
}

async function answers(port: number): Promise<{ pid: number } | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) });
    return res.ok ? ((await res.json()) as { pid: number }) : null;
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function print(json: boolean, value: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

async function run(): Promise<number> {
  const host = enrolled();
  const { startDaemon } = await import("../../recorder/daemon.ts");
  const log = (msg: string) => process.stderr.write(`${new Date().toISOString()} ${msg}\n`);
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  try {
    daemon = await startDaemon(host, log);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE")
      throw new ExitError(1, `tacho daemon: port ${host.ports.hooks} is in use (is a recorder already running?)`);
    throw err;
  }
  const gc = (globalThis as { gc?: () => void }).gc;
  // A full collection of this small heap takes a few ms; every 5 s it keeps the idle footprint low.
  if (gc) setInterval(gc, 5000).unref();
  await new Promise<void>((resolve) => {
    const onSignal = () => resolve();
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  });
  await daemon.stop();
  return 0;
}

/** Starts the recorder in the background unless it already runs; what happened, for the caller to print. */
export async function startRecorder(host: HostConfig): Promise<{ pid: number; started: boolean }> {
  const pid = readPid();
  if (pid && alive(pid) && (await answers(host.ports.hooks))) return { pid, started: false };
  mkdirSync(stateDir(), { recursive: true, mode: 0o700 });
  const log = openSync(statePath("recorder.log"), "a", 0o600);
  const [node, ...args] = recorderLaunch().argv;
  const child = spawn(node!, args, { detached: true, stdio: ["ignore", log, log], env: process.env });
  child.unref();
  for (let i = 0; i < 100; i++) {
    const health = await answers(host.ports.hooks);
    if (health?.pid === child.pid) return { pid: child.pid!, started: true };
    if (child.exitCode !== null || !alive(child.pid!)) break;
    await sleep(100);
  }
  throw new ExitError(1, `tacho daemon: the recorder did not come up; see ${statePath("recorder.log")}`);
}

async function start(json: boolean): Promise<number> {
  const host = enrolled();
  const r = await startRecorder(host);
  print(
    json,
    { running: true, pid: r.pid, port: host.ports.hooks, started: r.started },
    r.started ? `recorder started (pid ${r.pid}, 127.0.0.1:${host.ports.hooks})` : `recorder already running (pid ${r.pid})`,
  );
  return 0;
}

function runAll(commands: string[][]): string | null {
  for (const [cmd, ...args] of commands) {
    const r = spawnSync(cmd!, args, { encoding: "utf8" });
    if (r.error || r.status !== 0) return `${[cmd, ...args].join(" ")}: ${r.error?.message ?? (r.stderr.trim() || `exit ${r.status}`)}`;
  }
  return null;
}

async function install(json: boolean): Promise<number> {
  const host = enrolled();
  const launch = recorderLaunch();
  const file = serviceFile(launch);
  if (!file)
    throw new ExitError(
      1,
      `tacho daemon install: no login service for ${process.platform}; start the recorder at login with: ${launch.argv.join(" ")}`,
    );
  mkdirSync(dirname(file.path), { recursive: true });
  writeFileSync(file.path, file.text, { mode: 0o644 });
  // The service binds the hook port itself: a recorder started by `tacho daemon start` gives way,
  // and is started again if the service cannot be loaded, so the recorder never ends up stopped.
  await stop(true, true);
  const failed = runAll(serviceCommands(file).load);
  if (failed) {
    const again = await startRecorder(host).catch((err: Error) => ({ error: err.message }));
    throw new ExitError(
      1,
      `tacho daemon install: wrote ${file.path}, but loading it failed (${failed}); it starts at your next login if ${file.kind === "systemd" ? "systemd runs for your user" : "launchd loads it"}. ${"error" in again ? again.error : `Until then the recorder runs as before (pid ${again.pid}).`}`,
    );
  }
  for (let i = 0; i < 100 && !(await answers(host.ports.hooks)); i++) await sleep(100);
  print(
    json,
    { installed: true, service: file.name, path: file.path },
    `recorder installed as ${file.name} (${file.path}): it starts at login, and now`,
  );
  return 0;
}

async function uninstall(json: boolean): Promise<number> {
  const file = serviceFile(recorderLaunch());
  if (!file || !existsSync(file.path)) {
    print(json, { installed: false, removed: false }, "no login service is installed for the recorder");
    return 0;
  }
  // Unloading a service that is not loaded fails; removing its file is what matters.
  const failed = runAll(serviceCommands(file).unload);
  rmSync(file.path, { force: true });
  print(
    json,
    { installed: false, removed: true, path: file.path, ...(failed ? { warning: failed } : {}) },
    `removed ${file.name} (${file.path})${failed ? `; unloading it said: ${failed}` : ""}`,
  );
  return 0;
}

async function stop(json: boolean, quiet = false): Promise<number> {
  const pid = readPid();
  if (!pid || !alive(pid)) {
    rmSync(statePath("recorder.pid"), { force: true });
    if (!quiet) print(json, { running: false, stopped: false }, "recorder is not running");
    return 0;
  }
  process.kill(pid, "SIGTERM");
  for (let i = 0; i < 150 && alive(pid); i++) await sleep(100);
  if (alive(pid)) throw new ExitError(1, `tacho daemon: recorder ${pid} did not stop within 15 s`);
  if (!quiet) print(json, { running: false, stopped: true, pid }, `recorder ${pid} stopped`);
  return 0;
}

async function status(json: boolean): Promise<number> {
  const host = enrolled();
  const pid = readPid();
  const running = pid !== null && alive(pid);
  const health = await answers(host.ports.hooks);
  const ok = running && health !== null;
  print(
    json,
    { running, answering: health !== null, pid: running ? pid : null, port: host.ports.hooks },
    ok
      ? `recorder running (pid ${pid}, 127.0.0.1:${host.ports.hooks})`
      : running
        ? `recorder pid ${pid} is alive but port ${host.ports.hooks} does not answer`
        : "recorder is not running",
  );
  return ok ? 0 : 3;
}

export async function daemon(args: string[]): Promise<number> {
  const { values, positionals } = parse("tacho daemon", args, { json: { type: "boolean", default: false } });
  const [sub, ...extra] = positionals;
  if (extra.length) throw new UsageError(`tacho daemon: unexpected ${extra.join(" ")}\n${USAGE}`);
  switch (sub) {
    case "run":
      return run();
    case "start":
      return start(values.json);
    case "stop":
      return stop(values.json);
    case "status":
      return status(values.json);
    case "install":
      return install(values.json);
    case "uninstall":
      return uninstall(values.json);
    default:
      throw new UsageError(`tacho daemon: name a subcommand\n${USAGE}`);
  }
}
