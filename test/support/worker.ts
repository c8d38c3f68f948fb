// The real Worker under `wrangler dev` on a loopback port, with its own temporary D1/R2/DO state,
// a seeded workspace and operator token, and the RFC 8032 TEST 2 key as its signing key.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bytesToHex } from "../../protocol/index.ts";
import { devArgs, ensureDatabase, localUrl, ROOT, waitHealthy } from "../../scripts/dev-setup.ts";
import { freePort } from "./recorder.ts";
import { SERVER_SECRET } from "./sample-run.ts";

/** The tool-credential key the local Worker runs with (a test's own; production sets a secret). */
export const TOOLS_KEY = "5a".repeat(32);

export interface LocalWorker {
  url: string;
  port: number;
  token: string;
  workspace: string;
  persist: string;
  /** Calls the operator API with the seeded token. */
  api: (path: string, init?: RequestInit) => Promise<Response>;
  stop: () => Promise<void>;
  /** Starts it again on the same port and state (after stop). */
  restart: () => Promise<void>;
}

export async function startWorker(): Promise<LocalWorker> {
  const persist = mkdtempSync(join(tmpdir(), "oxagen-worker-"));
  const state = ensureDatabase(persist, join(persist, "oxagen-dev.json"));
  const port = await freePort();
  const url = localUrl(port);
  let child: ChildProcess | null = null;
  const launch = async () => {
    // Its output goes to a file beside its state, for reading after a failure.
    const log = openSync(join(persist, "wrangler.log"), "a");
    child = spawn(
      process.execPath,
      devArgs(port, [
        "--persist-to",
        persist,
        "--var",
        `OXAGEN_SIGNING_KEY:${bytesToHex(SERVER_SECRET)}`,
        "--var",
        `OXAGEN_TOOLS_KEY:${TOOLS_KEY}`,
        "--var",
        "OXAGEN_TOOLS_ALLOW_LOOPBACK:1",
        // An operator's change waits this long for the recorders to apply it: long enough for a
        // loaded machine, so a test that expects every computer applied never depends on speed.
        "--var",
        "OXAGEN_PUSH_WAIT_MS:15000",
        "--show-interactive-dev-session=false",
      ]),
      { cwd: ROOT, stdio: ["ignore", log, log], env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" } },
    );
    closeSync(log);
    await waitHealthy(url, 180_000);
  };
  await launch();
  const stop = async () => {
    const c = child as ChildProcess | null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGINT");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (c.exitCode === null) c.kill("SIGKILL");
  };
  return {
    url,
    port,
    token: state.token,
    workspace: state.workspace,
    persist,
    api: (path, init = {}) =>
      fetch(`${url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${state.token}`, "content-type": "application/json", ...(init.headers ?? {}) },
      }),
    stop,
    restart: launch,
  };
}

/**
 * Runs one SQL statement on a local Worker's D1 (its persisted state, while it runs): for what a
 * test cannot wait for, such as a code's expiry or fifteen minutes of silence.
 */
export function d1Execute(worker: Pick<LocalWorker, "persist">, statement: string): string {
  const r = spawnSync(
    process.execPath,
    [
      join(ROOT, "node_modules/wrangler/bin/wrangler.js"),
      "d1",
      "execute",
      "DB",
      "--local",
      "--persist-to",
      worker.persist,
      "--json",
      "--command",
      statement,
    ],
    { cwd: ROOT, encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" } },
  );
  if (r.status !== 0) throw new Error(`wrangler d1 execute: ${r.stderr}`);
  return r.stdout;
}
