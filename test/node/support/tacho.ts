import { spawn } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "../../..");
export const TACHO = join(ROOT, "collector/bin/tacho.js");
export const OXAGEN = join(ROOT, "collector/bin/oxagen.js");
/** The program enroll writes into hook commands when these tests run it: this Node and tacho, real paths. */
export const HOOK_PROGRAM = `${realpathSync(process.execPath)} ${realpathSync(TACHO)}`;

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A clean environment: PATH plus `extra`. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? "", ...extra };
}

/** Runs a command as a real process with `env` and `input` on stdin; collects its output. */
export function collect(command: string, args: string[], env: NodeJS.ProcessEnv, input: string | Buffer = ""): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.on("error", () => {});
    child.stdin.end(input);
  });
}

/** Runs a collector binary as a real process with the given environment and stdin. */
export function run(bin: string, args: string[], options: { env: Record<string, string>; input?: string | Buffer }): Promise<Ran> {
  return collect(process.execPath, [bin, ...args], childEnv(options.env), options.input);
}

/** A port nothing listens on (taken from the OS, then released). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

/** A temporary HOME with OXAGEN_HOME and CLAUDE_CONFIG_DIR inside it (enroll writes hooks that run this Node and tacho). */
export function tempHome(): { dir: string; env: Record<string, string>; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "tacho-test-"));
  return {
    dir,
    env: { HOME: dir, OXAGEN_HOME: join(dir, "state"), CLAUDE_CONFIG_DIR: join(dir, "claude") },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
