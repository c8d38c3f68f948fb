import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { connect } from "node:net";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { atSocket } from "../hook-fast/channel.cjs";
import { freshBundle } from "./bundle.ts";
import { stateDir, statePath } from "./state.ts";

const TACHO = fileURLToPath(new URL("../bin/tacho.js", import.meta.url));

/**
 * Starts `tacho daemon run` detached (its own session, output to recorder.log, working directory
 * the state directory), from the built bundle when it is current. A small young generation and
 * an explicit GC when idle keep the long-lived recorder's memory low.
 */
export function spawnRecorder(): ChildProcess {
  const dir = resolve(stateDir());
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const log = openSync(statePath("recorder.log"), "a", 0o600);
  try {
    const child = spawn(process.execPath, ["--max-semi-space-size=1", "--expose-gc", freshBundle() ?? TACHO, "daemon", "run"], {
      detached: true,
      cwd: dir,
      stdio: ["ignore", log, log],
      env: process.env.OXAGEN_HOME ? { ...process.env, OXAGEN_HOME: dir } : process.env,
    });
    child.unref();
    return child;
  } finally {
    closeSync(log);
  }
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
