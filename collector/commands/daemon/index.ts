import { rmSync } from "node:fs";
import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { alive, readPid } from "../../lib/pid.ts";
import { recorderHealth, spawnRecorder } from "../../lib/recorder-process.ts";
import { readHost, statePath, type HostConfig } from "../../lib/state.ts";

const USAGE = "usage: tacho daemon start|stop|status|run [--json]";

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
  const { startDaemon } = await import("../../recorder/daemon.ts");
  const log = (msg: string) => process.stderr.write(`${new Date().toISOString()} ${msg}\n`);
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  try {
    daemon = await startDaemon(host, log);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") throw new ExitError(1, `tacho daemon: ${(err as Error).message}`);
    throw err;
  }
  const gc = (globalThis as { gc?: () => void }).gc;
  // A full collection of this small heap takes a few ms; every 5 s it keeps the idle footprint low.
  if (gc) setInterval(gc, 5000).unref();
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
  // The recorder is asked on its own socket: whatever else listens on the hook port is not it.
  const running = await recorderHealth();
  if (running) {
    print(
      json,
      { running: true, pid: running.pid, port: host.ports.hooks, started: false },
      `recorder already running (pid ${running.pid})`,
    );
    return 0;
  }
  const child = spawnRecorder();
  for (let i = 0; i < 100; i++) {
    const health = await recorderHealth();
    if (health?.pid === child.pid) {
      print(
        json,
        { running: true, pid: child.pid, port: host.ports.hooks, started: true },
        `recorder started (pid ${child.pid}, 127.0.0.1:${host.ports.hooks})`,
      );
      return 0;
    }
    if (child.exitCode !== null || !alive(child.pid!)) break;
    await sleep(100);
  }
  throw new ExitError(1, `tacho daemon: the recorder did not come up; see ${statePath("recorder.log")}`);
}

async function stop(json: boolean): Promise<number> {
  const pid = readPid();
  if (!pid || !alive(pid)) {
    rmSync(statePath("recorder.pid"), { force: true });
    print(json, { running: false, stopped: false }, "recorder is not running");
    return 0;
  }
  process.kill(pid, "SIGTERM");
  for (let i = 0; i < 150 && alive(pid); i++) await sleep(100);
  if (alive(pid)) throw new ExitError(1, `tacho daemon: recorder ${pid} did not stop within 15 s`);
  print(json, { running: false, stopped: true, pid }, `recorder ${pid} stopped`);
  return 0;
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
    default:
      throw new UsageError(`tacho daemon: name a subcommand\n${USAGE}`);
  }
}
