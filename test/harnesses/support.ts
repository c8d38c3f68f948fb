// One computer for a real-harness test file: the collector installed from its archive, the real
// Worker, a workspace policy with an explicit allow and an explicit deny clause, and `tacho enroll`
// run exactly as `npm start` prints it. The harness then runs with a PATH that holds no tacho.
import { spawn, spawnSync } from "node:child_process";
import { expect } from "vitest";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { editablePolicy, runIdFor } from "../../protocol/index.ts";
import { enrollLine, enrollmentToken } from "../../scripts/dev-setup.ts";
import { eventually, QUICK_RECORDER } from "../support/e2e.ts";
import { installCollector, type Installed } from "../support/package.ts";
import { freePort } from "../support/recorder.ts";
import { startWorker, type LocalWorker } from "../support/worker.ts";

export const HARNESS_BIN = join(import.meta.dirname, "node_modules", ".bin");
/** The harness's PATH: system tools only, so no tacho (and the system Node is the old one). */
export const HARNESS_PATH = "/usr/bin:/bin";

export const CLAUSES = [
  { id: "allow-echo", tool: "Bash", command: "echo *", decision: "allow", reason: "echo is harmless" },
  { id: "no-rm", tool: "*", command: "rm *", decision: "deny", reason: "no deletes in this workspace" },
  { id: "ask-write", tool: "Write", decision: "ask", reason: "new files need a person" },
] as const;

export interface Frame {
  seq: number;
  kind: string;
  payload: string;
}

export interface Computer {
  pkg: Installed;
  worker: LocalWorker;
  home: string;
  hostId: string;
  /** What `tacho enroll --json` answered, and its exit status. */
  enrolled: { status: number | null; answer: Record<string, unknown> };
  /** Runs the installed tacho (or oxagen) as this computer's user; `env` adds to its environment. */
  tacho: (args: string[], env?: Record<string, string>) => { status: number | null; stdout: string; stderr: string };
  oxagen: (args: string[]) => { status: number | null; stdout: string; stderr: string };
  /** A fresh git workspace for one session. */
  workspace: () => string;
  /** Stops the recorder and the server (the server is shared with the users made by {@link userOf}). */
  stop: () => Promise<void>;
  /** Stops this user's recorder only. */
  stopRecorder: () => void;
}

const QUICK = { ...QUICK_RECORDER, OXAGEN_TRANSCRIPT_QUIET_MS: "500", OXAGEN_WORKTREE_MS: "200" };

/**
 * Sets up the computer and enrolls it for `harness` (a list, comma-separated); `before` runs first
 * (e.g. to write the harness's own config); `policy` adds to the workspace policy; `more` adds to
 * enroll's command line (`args`) and environment (`env`, e.g. the shell's own ANTHROPIC_BASE_URL).
 */
export async function enrolledComputer(
  harness: string,
  before: (home: string) => void = () => {},
  policy: Record<string, unknown> = {},
  more: { args?: string[]; env?: Record<string, string> } = {},
): Promise<Computer> {
  const pkg = installCollector();
  const worker = await startWorker();
  const current = (await (await worker.api(`/v1/workspaces/${worker.workspace}/policy`)).json()) as { policy: Record<string, unknown> };
  const editable = editablePolicy(current.policy);
  const put = await worker.api(`/v1/workspaces/${worker.workspace}/policy`, {
    method: "PUT",
    body: JSON.stringify({ ...editable, tools: CLAUSES, ...policy }),
  });
  if (put.status !== 200) throw new Error(`policy: ${put.status} ${await put.text()}`);

  return userOf(pkg, worker, harness, before, more);
}

/**
 * Another user of the computer (a HOME of their own, the same installed collector and server),
 * enrolled with a new token as `npm start` prints it; `more.args` may name its ports.
 */
export async function userOf(
  pkg: Installed,
  worker: LocalWorker,
  harness: string,
  before: (home: string) => void = () => {},
  more: { args?: string[]; env?: Record<string, string> } = {},
): Promise<Computer> {
  const home = mkdtempSync(join(tmpdir(), `oxagen-${harness}-`));
  before(home);
  const env = { HOME: home, PATH: process.env.PATH ?? "", ...QUICK };
  const run = (bin: string, args: string[], extra: Record<string, string> = {}) => {
    const r = spawnSync(bin, args, { env: { ...env, ...extra }, encoding: "utf8", timeout: 120_000 });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  // The line `npm start` prints, with this test's own ports (other tests may hold the defaults).
  const [program, ...args] = enrollLine(worker.url, await enrollmentToken(worker.url, worker.token)).split(" ");
  if (program !== "tacho") throw new Error(`npm start's enroll line does not start with tacho: ${program}`);
  // Two ports of its own from the OS: port + 1 may be some connection's on a busy machine.
  const [port, gatewayPort] = [await freePort(), await freePort()];
  const ports = more.args?.includes("--hooks-port") ? [] : ["--hooks-port", String(port), "--gateway-port", String(gatewayPort)];
  const line = [...args.map((a) => (a === "claude-code" ? harness : a)), ...ports, ...(more.args ?? []), "--json"];
  const enrolled = run(pkg.tacho, line, more.env);
  // A user whose recorder cannot listen gets exit 1 with the enrollment made (the reason is in cannot_listen).
  const answer = JSON.parse(enrolled.stdout || "null") as { host_id: string; cannot_listen?: string[] } | null;
  if (enrolled.status !== 0 && !answer?.cannot_listen?.length)
    throw new Error(`tacho enroll exited ${enrolled.status}: ${enrolled.stderr}${enrolled.stdout}`);
  const hostId = answer!.host_id;
  let n = 0;
  return {
    pkg,
    worker,
    home,
    hostId,
    enrolled: { status: enrolled.status, answer: answer as Record<string, unknown> },
    tacho: (a, e) => run(pkg.tacho, a, e),
    oxagen: (a) => run(pkg.oxagen, a),
    workspace: () => {
      const ws = join(home, `ws-${++n}`);
      mkdirSync(join(ws, "build"), { recursive: true });
      writeFileSync(join(ws, "build", "keep.txt"), "built\n");
      for (const git of [
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "start"],
      ])
        spawnSync("git", git, { cwd: ws });
      return ws;
    },
    stop: async () => {
      run(pkg.tacho, ["daemon", "stop"]);
      await worker.stop();
    },
    stopRecorder: () => {
      run(pkg.tacho, ["daemon", "stop"]);
    },
  };
}

/** Runs a harness CLI to its end (async, so the vendor in this process can answer it). */
export function runHarness(
  bin: string,
  args: string[],
  opts: { cwd: string; env: Record<string, string>; onSpawn?: (pid: number) => void },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(HARNESS_BIN, bin), args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("spawn", () => opts.onSpawn?.(child.pid!));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Waits until the run has ended on the server (agent_stop, final lock) and returns its frames. */
export async function endedRun(c: Computer, harness: string, sessionId: string): Promise<{ id: string; frames: Frame[] }> {
  const id = runIdFor(c.hostId, harness, sessionId);
  await eventually(
    async () => {
      const res = await c.worker.api(`/v1/runs/${id}`);
      return res.status === 200 && ((await res.json()) as { status: string }).status === "ended";
    },
    `the ${harness} run ${id} to end on the server`,
    120_000,
  );
  const frames = ((await (await c.worker.api(`/v1/runs/${id}/frames?limit=1000`)).json()) as { frames: Frame[] }).frames;
  return { id, frames };
}

/**
 * Exports the run and checks the bundle with the installed `oxagen verify`; returns its JSON result.
 * The run ends on the server before the recorder has sent every body it kept (bodies follow their
 * frames), so an export that finds bodies missing is taken again until they are in.
 */
export async function exportAndVerify(c: Computer, id: string): Promise<{ status: number | null; result: Record<string, unknown> }> {
  const keys = (await (await fetch(`${c.worker.url}/v1/keys`)).json()) as { keys: { pub: string }[] };
  const bundle = join(c.home, `${id}.oxagen.jsonl`);
  const once = async () => {
    const exported = await c.worker.api(`/v1/runs/${id}/export`);
    if (exported.status !== 200) throw new Error(`export: ${exported.status} ${await exported.text()}`);
    writeFileSync(bundle, await exported.text());
    const r = c.oxagen(["verify", bundle, "--server-key", keys.keys[0]!.pub, "--json"]);
    return { status: r.status, result: JSON.parse(r.stdout) as Record<string, unknown> };
  };
  let last = await once();
  await eventually(async () => {
    if (!JSON.stringify(last.result.findings).includes("missing_bodies")) return true;
    last = await once();
    return false;
  }, `every body of ${id} on the server`);
  return last;
}

/**
 * The frames every recorded harness session here holds: each kind in `kinds`, agent_start first,
 * agent_stop last, and the policy's explicit allow and deny clauses applied (the denied call refused).
 */
export function expectSession(frames: Frame[], kinds: string[]): void {
  const seen = new Set(frames.map((f) => f.kind));
  for (const kind of [
    "agent_start",
    "turn_start",
    "policy_decision",
    "tool_requested",
    "token_denied",
    "tool_call",
    "command",
    "turn_end",
    "agent_stop",
    "llm_call",
    ...kinds,
  ])
    expect(seen, kind).toContain(kind);
  expect(frames[0]!.kind).toBe("agent_start");
  expect(frames.at(-1)!.kind).toBe("agent_stop");
  const decisions = payloadsOf(frames, "policy_decision");
  expect(decisions).toContainEqual(expect.objectContaining({ decision: "allow", rule: "allow-echo", tool_name: "Bash" }));
  expect(decisions).toContainEqual(expect.objectContaining({ decision: "deny", rule: "no-rm", reason: "no deletes in this workspace" }));
  expect(payloadsOf(frames, "token_denied")).toEqual([expect.objectContaining({ reason: "no deletes in this workspace" })]);
  // A frame carries hashes, never the text.
  expect(frames.every((f) => !f.payload.includes("tidy up this workspace"))).toBe(true);
}

/** The payloads of the frames of one kind, parsed. */
export function payloadsOf(frames: Frame[], kind: string): Record<string, unknown>[] {
  return frames.filter((f) => f.kind === kind).map((f) => JSON.parse(f.payload) as Record<string, unknown>);
}
