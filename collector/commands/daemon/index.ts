import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { alive, readPid } from "../../lib/pid.ts";
import { recorderHealth, recorderLaunch, startRecorder } from "../../lib/recorder-process.ts";
import { readHost, statePath, type HostConfig } from "../../lib/state.ts";
import { removeService, runAll, serviceCommands, serviceFile } from "./service.ts";

export const USAGE = `usage: tacho daemon start|stop|status|run|install|uninstall [--json]

  start       starts the recorder in the background (tacho enroll does this too)
  stop        stops it (the next hook starts it again; it says how to keep it stopped)
  status      says whether it runs and answers on the hook port (exit 3 when not)
  run         runs it in the foreground (what a login service runs)
  install     writes a login service that starts the recorder at login and restarts it when it
              fails (a systemd user unit on Linux, a launchd agent on macOS), and starts it now
  uninstall   stops that service and removes its file`;

function enrolled(): HostConfig {
  const host = readHost();
  if (!host) throw new ExitError(1, `tacho daemon: this computer is not enrolled (no ${statePath("host.json")}); run tacho enroll first`);
  return host;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function print(json: boolean, value: Record<string, unknown>, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

async function run(): Promise<number> {
  const host = enrolled();
  const { startDaemon } = await import("../../daemon/index.ts");
  const log = (msg: string) => process.stderr.write(`${new Date().toISOString()} ${msg}\n`);
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  try {
    daemon = await startDaemon(host, log);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") throw new ExitError(1, `tacho daemon: ${(err as Error).message}`);
    throw err;
  }
  await new Promise<void>((resolve) => {
    const onSignal = () => resolve();
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
    daemon.orphaned.then(() => {
      log("host.json is gone: this enrollment was removed; stopping");
      resolve();
    });
  });
  await daemon.stop();
  return 0;
}

async function start(json: boolean): Promise<number> {
  const host = enrolled();
  const r = await startRecorder();
  print(
    json,
    { running: true, pid: r.pid, port: host.ports.hooks, started: r.started },
    r.started ? `recorder started (pid ${r.pid}, 127.0.0.1:${host.ports.hooks})` : `recorder already running (pid ${r.pid})`,
  );
  return 0;
}

async function install(json: boolean): Promise<number> {
  enrolled();
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
    const again = await startRecorder().catch((err: Error) => ({ error: err.message }));
    throw new ExitError(
      1,
      `tacho daemon install: wrote ${file.path}, but loading it failed (${failed}); it starts at your next login if ${file.kind === "systemd" ? "systemd runs for your user" : "launchd loads it"}. ${"error" in again ? again.error : `Until then the recorder runs as before (pid ${again.pid}).`}`,
    );
  }
  for (let i = 0; i < 100 && !(await recorderHealth()); i++) await sleep(100);
  print(
    json,
    { installed: true, service: file.name, path: file.path },
    `recorder installed as ${file.name} (${file.path}): it starts at login, and now`,
  );
  return 0;
}

async function uninstall(json: boolean): Promise<number> {
  const removed = removeService();
  if (!removed) {
    print(json, { installed: false, removed: false }, "no login service is installed for the recorder");
    return 0;
  }
  const { file, failed } = removed;
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
  if (!quiet) {
    const keep = keepStopped();
    print(json, { running: false, stopped: true, pid, restarts: keep }, `recorder ${pid} stopped\n${keep}`);
  }
  return 0;
}

/** What starts a stopped recorder again, and how to keep it stopped. */
function keepStopped(): string {
  const file = serviceFile(recorderLaunch());
  const service =
    file && existsSync(file.path) ? `, and its login service (${file.name}) at your next login (tacho daemon uninstall removes it)` : "";
  return `The next hook of a wrapped harness or custom agent starts it again, so no step goes unrecorded${service}. To keep it stopped, stop wrapping: tacho reassign --harness none (custom agents: stop calling tacho hook), or tacho unenroll.`;
}

async function status(json: boolean): Promise<number> {
  const host = enrolled();
  const pid = readPid();
  const running = pid !== null && alive(pid);
  const health = await recorderHealth();
  const ok = running && health !== null;
  print(
    json,
    { running, answering: health !== null, pid: running ? pid : null, port: host.ports.hooks },
    ok
      ? `recorder running (pid ${pid}, 127.0.0.1:${host.ports.hooks})`
      : running
        ? `recorder pid ${pid} is alive but does not answer on its socket`
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
