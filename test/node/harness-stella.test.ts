// Stella end to end: a stand-in Stella process (a process named `stella`) runs the written entries
// as `bash -c` with Stella's payloads; the session is derived from that process and ends when it exits.
// Also the generalized endings: a harness process gone without a SessionEnd, and a quiet session.
import { spawn } from "node:child_process";
import { mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseLock, runIdFor, verifyChain } from "../../protocol/index.ts";
import { HOST, NODE, payloads, readJournal, sendLine, startDaemon, until, type DaemonProc } from "../support/recorder.ts";
import { harnessHome, writtenCommand, type HarnessHome } from "./support/harness-replay.ts";

const running: DaemonProc[] = [];
afterEach(async () => {
  for (const d of running.splice(0)) {
    d.proc.kill("SIGKILL");
    await d.exited;
  }
});

// Runs each [command, payload] as Stella does (bash -c, cwd = workspace), prints one JSON line per answer, then exits.
const FAKE_STELLA = `
const { spawnSync } = require("node:child_process");
const steps = JSON.parse(require("node:fs").readFileSync(process.argv[2], "utf8"));
const out = [];
for (const [command, payload] of steps) {
  const r = spawnSync("bash", ["-c", command], { input: JSON.stringify(payload), encoding: "utf8", cwd: payload.cwd });
  out.push({ code: r.status, stdout: r.stdout, stderr: r.stderr });
}
process.stdout.write(JSON.stringify({ pid: process.pid, out }));
`;

async function runStella(
  h: HarnessHome,
  steps: [string, Record<string, unknown>][],
): Promise<{ pid: number; out: { code: number; stdout: string; stderr: string }[] }> {
  const dir = mkdtempSync(join(tmpdir(), "fake-stella-"));
  const bin = join(dir, "stella");
  symlinkSync(realpathSync(NODE), bin);
  writeFileSync(join(dir, "stella.cjs"), FAKE_STELLA);
  writeFileSync(join(dir, "steps.json"), JSON.stringify(steps));
  const child = spawn(bin, [join(dir, "stella.cjs"), join(dir, "steps.json")], {
    env: h.env as unknown as NodeJS.ProcessEnv,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let text = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (text += d));
  await new Promise((r) => child.on("close", r));
  return JSON.parse(text);
}

describe("Stella end to end", () => {
  it("derives the session from the Stella process, answers with action decisions (require_approval for ask), ends when Stella exits", async () => {
    const h = await harnessHome(["stella"]);
    running.push(await startDaemon(h, { OXAGEN_PID_POLL_MS: "100" }));
    const cwd = mkdtempSync(join(tmpdir(), "ws-"));
    const cmd = (e: string) => writtenCommand(h, "stella", e);
    const steps: [string, Record<string, unknown>][] = [
      [cmd("SessionStart"), { event: "SessionStart", cwd }],
      [cmd("PreToolUse"), { event: "PreToolUse", cwd, tool: { name: "bash", input: { command: "cargo test" }, read_only: false } }],
      [
        cmd("PostToolUse"),
        {
          event: "PostToolUse",
          cwd,
          tool: { name: "bash", input: { command: "cargo test" }, read_only: false },
          toolResult: "test result: ok. 12 passed",
        },
      ],
      [cmd("PreToolUse"), { event: "PreToolUse", cwd, tool: { name: "bash", input: { command: "rm -rf target" }, read_only: false } }],
      [
        cmd("PreToolUse"),
        { event: "PreToolUse", cwd, tool: { name: "bash", input: { command: "git push origin main" }, read_only: false } },
      ],
      [
        cmd("PostToolUse"),
        {
          event: "PostToolUse",
          cwd,
          tool: { name: "task_create", input: { subject: "Fix the auth redirect loop" }, read_only: false },
          toolResult: "created 1 task(s)",
        },
      ],
      [cmd("Stop"), { event: "Stop", cwd, finalText: "Tests pass; the push waits for approval." }],
    ];
    const { pid, out } = await runStella(h, steps);
    for (const o of out) expect(o.code, o.stderr).toBe(0);
    // Stella appends a SessionStart hook's stdout to the system prompt: that hook prints nothing.
    const answers = out.map((o) => JSON.parse(o.stdout.trim() || "null"));
    expect(answers).toEqual([
      null,
      // No clause decides `cargo test`: no decision, Stella goes on as if no hook had spoken.
      {},
      { action: "allow" },
      { action: "deny", reason: "no deletes" },
      { action: "require_approval", reason: "pushes need a person" },
      { action: "allow" },
      { action: "allow" },
    ]);

    const [chain, view] = await until(() => {
      const hit = [...readJournal(h)].find(([, x]) => (x.run as { harness?: string } | null)?.harness === "stella");
      return hit && hit[1].frames.at(-1)?.kind === "agent_stop" ? hit : null;
    });
    expect(verifyChain(chain, view.frames).problems).toEqual([]);
    expect(view.frames.map((f) => f.kind)).toEqual([
      "agent_start",
      "policy_decision",
      "tool_requested",
      "tool_call",
      "command",
      "policy_decision",
      "token_denied",
      "policy_decision",
      "tool_requested",
      "tool_call",
      "turn_end",
      "agent_stop",
    ]);
    const p = payloads(view);
    expect(p[0]).toMatchObject({ harness: "stella", pid, cwd });
    expect(p[1]).toMatchObject({ decision: "none", rule: "default" });
    expect(p[7]).toMatchObject({ decision: "ask", rule: "ask-push" });
    expect(p[11]).toMatchObject({ path: "recorder", reason: "process_exited", outcome: "completed" });
    expect(view.locks.map(parseLock).at(-1)).toMatchObject({ final: true, count: view.frames.length });
    // One Stella process in one workspace is one session.
    expect(new Set(readJournal(h).keys()).size).toBe(1);
    expect((view.run as { session_id: string }).session_id).toMatch(/^stella-[0-9a-f]{32}$/);
  });
});

describe("how sessions end without a SessionEnd", () => {
  it("a harness process that exits without ending its session: crashed, with an unobserved tail", async () => {
    const h = await harnessHome(["codex"]);
    running.push(await startDaemon(h, { OXAGEN_PID_POLL_MS: "100" }));
    const child = spawn("sleep", ["30"]);
    const event = {
      session_id: "crash-1",
      hook_event_name: "SessionStart",
      source: "startup",
      cwd: "/w",
      model: "m",
      transcript_path: null,
    };
    await sendLine(h, {
      v: 1,
      id: "00000000000000c1",
      t: Date.now(),
      source: "command",
      harness: "codex",
      agent: null,
      event,
      pid: child.pid,
    });
    const chain = runIdFor(HOST, "codex", "crash-1");
    await new Promise((r) => setTimeout(r, 400));
    expect(
      readJournal(h)
        .get(chain)!
        .frames.map((f) => f.kind),
    ).toEqual(["agent_start"]);
    child.kill("SIGKILL");
    const view = await until(() => {
      const v = readJournal(h).get(chain)!;
      return v.frames.at(-1)?.kind === "agent_stop" ? v : null;
    });
    expect(view.frames.map((f) => f.kind)).toEqual(["agent_start", "telemetry_gap", "agent_stop"]);
    expect(payloads(view).slice(1)).toMatchObject([{ cause: "unobserved_tail" }, { reason: "process_exited", outcome: "crashed" }]);
    expect(view.locks.map(parseLock).at(-1)).toMatchObject({ final: true });
  });

  it("a session quiet longer than OXAGEN_QUIET_MS: crashed, with an unobserved tail", async () => {
    const h = await harnessHome(["cursor"]);
    running.push(await startDaemon(h, { OXAGEN_QUIET_MS: "500", OXAGEN_LOCK_INTERVAL_MS: "100" }));
    const event = { conversation_id: "quiet-1", hook_event_name: "sessionStart", workspace_roots: ["/w"] };
    expect(
      (await sendLine(h, { v: 1, id: "00000000000000d1", t: Date.now(), source: "command", harness: "cursor", agent: null, event })).answer,
    ).toEqual({});
    const chain = runIdFor(HOST, "cursor", "quiet-1");
    const view = await until(() => {
      const v = readJournal(h).get(chain)!;
      return v.frames.at(-1)?.kind === "agent_stop" ? v : null;
    });
    expect(view.frames.map((f) => f.kind)).toEqual(["agent_start", "telemetry_gap", "agent_stop"]);
    const p = payloads(view);
    expect(p[1]).toMatchObject({ cause: "unobserved_tail" });
    expect(p[2]).toMatchObject({ reason: "quiet", outcome: "crashed" });
    expect((p[1]!.to_ms as number) - (p[1]!.from_ms as number)).toBeGreaterThanOrEqual(500);
  });
});
