// Helpers for end-to-end tests: the real `tacho`/`oxagen` processes against the real Worker.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, holdAutostart, NODE, ROOT, sleep, TACHO } from "./recorder.ts";
import type { LocalWorker } from "./worker.ts";

export const OXAGEN = join(ROOT, "collector/bin/oxagen.js");

export interface Computer {
  home: string;
  env: NodeJS.ProcessEnv;
  port: number;
  /**
   * The gateway's port: one of its own from the OS, not `port + 1`. Ports the OS hands to a
   * listener are odd here and the ones it gives outgoing connections even, so on a busy machine
   * `port + 1` is sometimes some connection's, and the gateway could not listen.
   */
  gatewayPort: number;
  tacho: (args: string[], input?: string) => { status: number | null; stdout: string; stderr: string };
  /** Runs `tacho hook --agent NAME` (or --harness) with one payload and returns its parsed answer. */
  hook: (who: string[], payload: Record<string, unknown>) => Record<string, unknown>;
}

/** Recorder timers short enough for tests (the recorder reads them from its environment). */
export const QUICK_RECORDER = {
  OXAGEN_LOCK_INTERVAL_MS: "500",
  OXAGEN_SHIP_DELAY_MS: "50",
  OXAGEN_SHIP_BACKOFF_MS: "200",
  OXAGEN_SHIP_BACKOFF_MAX_MS: "1000",
  OXAGEN_POLICY_INTERVAL_MS: "1000",
  OXAGEN_STATUS_INTERVAL_MS: "1000",
};

/** A fresh computer: its own HOME, state dir and Claude config dir, with fast recorder timers. */
export async function newComputer(extraEnv: NodeJS.ProcessEnv = {}): Promise<Computer> {
  const home = mkdtempSync(join(tmpdir(), "oxagen-e2e-"));
  const [port, gatewayPort] = [await freePort(), await freePort()];
  const bin = join(home, "bin");
  // Hook commands written into harness configs run `tacho` from PATH.
  spawnSync("mkdir", ["-p", bin]);
  writeFileSync(join(bin, "tacho"), `#!/bin/sh\nexec "${NODE}" "${TACHO}" "$@"\n`, { mode: 0o755 });
  const env = {
    ...process.env,
    HOME: home,
    OXAGEN_HOME: join(home, "state"),
    CLAUDE_CONFIG_DIR: join(home, "claude"),
    PATH: `${bin}:${process.env.PATH}`,
    ...QUICK_RECORDER,
    ...extraEnv,
  };
  holdAutostart(env.OXAGEN_HOME);
  const tacho = (args: string[], input?: string) => run(env, TACHO, args, input);
  return {
    home,
    env,
    port,
    gatewayPort,
    tacho,
    hook: (who, payload) => {
      const r = tacho(["hook", ...who], JSON.stringify(payload));
      if (r.status !== 0) throw new Error(`tacho hook exited ${r.status}: ${r.stderr}`);
      return JSON.parse(r.stdout) as Record<string, unknown>;
    },
  };
}

function run(env: NodeJS.ProcessEnv, bin: string, args: string[], input?: string) {
  const r = spawnSync(NODE, [bin, ...args], { env, input, encoding: "utf8", timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Runs `oxagen` on a computer. */
export function oxagen(computer: Computer, args: string[]) {
  return run(computer.env, OXAGEN, args);
}

/** Enrolls a computer with a fresh one-time token. */
export async function enroll(worker: LocalWorker, computer: Computer, harness: string[] = []): Promise<{ hostId: string }> {
  const res = await worker.api("/v1/enrollment-tokens", { method: "POST", body: "{}" });
  if (res.status !== 201) throw new Error(`enrollment token: ${res.status} ${await res.text()}`);
  const { token } = (await res.json()) as { token: string };
  // The tests run the recorder themselves (runDaemon), so enroll does not start one.
  const common = [
    "--no-start",
    "--server",
    worker.url,
    "--token",
    token,
    "--hooks-port",
    String(computer.port),
    "--gateway-port",
    String(computer.gatewayPort),
    "--json",
  ];
  // A computer that only runs custom agents enrolls with `oxagen agent enroll` and wraps no harness.
  const r = harness.length
    ? computer.tacho(["enroll", ...common, "--harness", harness.join(",")])
    : run(computer.env, OXAGEN, ["agent", "enroll", ...common]);
  if (r.status !== 0) throw new Error(`tacho enroll exited ${r.status}: ${r.stderr}${r.stdout}`);
  return { hostId: (JSON.parse(r.stdout) as { host_id: string }).host_id };
}

/** Polls until `fn` returns a truthy value or the deadline passes. */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false>, what: string, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}

/** Starts `tacho daemon run` in the foreground as a child we can kill -9. */
export function runDaemon(computer: Computer) {
  const proc = spawn(NODE, [TACHO, "daemon", "run"], { env: computer.env, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  proc.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on("exit", (c) => r(c)));
  return { proc, log: () => log, exited };
}

export async function daemonUp(computer: Computer): Promise<void> {
  await eventually(async () => (await fetch(`http://127.0.0.1:${computer.port}/healthz`)).ok, "the recorder to answer", 30_000);
}

/** Waits until the computer's recorder reports nothing pending (every frame, lock and body acknowledged). */
export async function drained(computer: Computer, since = Date.now(), ms = 60_000): Promise<void> {
  const { readFileSync } = await import("node:fs");
  await eventually(
    async () => {
      const status = JSON.parse(readFileSync(join(computer.env.OXAGEN_HOME!, "recorder-status.json"), "utf8")) as {
        pending: { frames: number; locks: number; bodies: number };
        heartbeat_ms: number;
      };
      return status.pending.frames + status.pending.locks + status.pending.bodies === 0 && status.heartbeat_ms > since;
    },
    "the recorder to deliver everything",
    ms,
  );
}

/** Stops a foreground recorder and the local Worker (afterAll of an end-to-end file). */
export async function stopAll(
  daemon: ReturnType<typeof runDaemon> | undefined,
  worker: { stop: () => Promise<void> } | undefined,
): Promise<void> {
  await stopDaemon(daemon);
  await worker?.stop();
}

/** Stops a foreground recorder (SIGTERM: it locks and ships first) and waits for it to exit; `undefined`, for the caller's variable. */
export async function stopDaemon(daemon: ReturnType<typeof runDaemon> | undefined): Promise<undefined> {
  daemon?.proc.kill("SIGTERM");
  await daemon?.exited;
  return undefined;
}

/**
 * A Claude Code session on `computer` whose transcript holds one finished model call: the
 * recorder reads it at Stop and records an llm_call (path `transcript`) for the server to price.
 */
export function claudeSession(computer: Computer, session: string, call: { model: string; usage: Record<string, number> }) {
  const transcript = join(mkdtempSync(join(tmpdir(), "oxagen-tr-")), "t.jsonl");
  const line = {
    type: "assistant",
    requestId: `req_${session}`,
    timestamp: new Date().toISOString(),
    message: { id: `msg_${session}`, model: call.model, stop_reason: "end_turn", usage: call.usage },
  };
  writeFileSync(transcript, `${JSON.stringify(line)}\n`);
  const hook = (event: string, extra: Record<string, unknown> = {}) =>
    computer.hook(["--harness", "claude-code"], {
      session_id: session,
      transcript_path: transcript,
      cwd: "/tmp",
      hook_event_name: event,
      ...extra,
    });
  hook("SessionStart");
  hook("UserPromptSubmit", { prompt: "go" });
  hook("Stop");
  return hook;
}

/** The text of every file under `dir` (latin1, so any byte shows): for checking a secret is in none of them. */
export function filesText(dir: string): string {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(readFileSync(p, "latin1"));
    }
  };
  walk(dir);
  return out.join("\n");
}
