// End to end for Claude Code: enroll into a settings.json that already has other hooks, replay
// realistic payloads through the written command hooks and HTTP hooks, and read the run back.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runIdFor } from "../../../protocol/index.ts";
import { daemonUp, stopAll, drained, enroll, eventually, newComputer, runDaemon, type Computer } from "../../support/e2e.ts";
import { startWorker, type LocalWorker } from "../../support/worker.ts";

const OTHER_SETTINGS = `{
  "model": "claude-sonnet-4-5",
  "permissions": { "allow": ["Bash(npm test)"], "deny": ["Read(./.env)"] },
  "hooks": {
    "PreToolUse": [
      { "matcher": "Bash", "hooks": [{ "type": "command", "command": "/usr/local/bin/audit-bash.sh", "timeout": 30 }] }
    ],
    "Notification": [{ "hooks": [{ "type": "command", "command": "notify-send claude" }] }]
  },
  "env": { "FOO": "bar" }
}
`;

let worker: LocalWorker;
let computer: Computer;
let hostId: string;
let daemon: ReturnType<typeof runDaemon>;
let settingsPath: string;

interface Handler {
  type: string;
  command?: string;
  url?: string;
  headers?: Record<string, string>;
}
type Settings = { hooks: Record<string, { matcher?: string; hooks: Handler[] }[]> };

function ours(event: string): Handler {
  const settings = JSON.parse(readFileSync(settingsPath, "utf8")) as Settings;
  const handlers = (settings.hooks[event] ?? []).flatMap((g) => g.hooks);
  const mine = handlers.filter(
    (h) => (h.command ?? "").includes("hook --harness claude-code") || (h.url ?? "").includes("/hooks/claude-code"),
  );
  expect(mine, `exactly one collector entry for ${event}`).toHaveLength(1);
  return mine[0]!;
}

async function fire(event: string, payload: Record<string, unknown>): Promise<Record<string, unknown>> {
  const handler = ours(event);
  const body = JSON.stringify({
    session_id: "cc-session-1",
    transcript_path: null,
    cwd: computer.home,
    permission_mode: "default",
    hook_event_name: event,
    ...payload,
  });
  if (handler.type === "http") {
    const res = await fetch(handler.url!, { method: "POST", headers: { "content-type": "application/json", ...handler.headers }, body });
    expect(res.status).toBe(200);
    const text = await res.text();
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  }
  const r = spawnSync("sh", ["-c", handler.command!], { env: computer.env, input: body, encoding: "utf8" });
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

beforeAll(async () => {
  worker = await startWorker();
  computer = await newComputer();
  settingsPath = join(computer.env.CLAUDE_CONFIG_DIR!, "settings.json");
  mkdirSync(computer.env.CLAUDE_CONFIG_DIR!, { recursive: true });
  writeFileSync(settingsPath, OTHER_SETTINGS);
  hostId = (await enroll(worker, computer, ["claude-code"])).hostId;
  daemon = runDaemon(computer);
  await daemonUp(computer);
}, 240_000);

afterAll(() => stopAll(daemon, worker));

describe("Claude Code, end to end", () => {
  it("keeps every entry it did not write, and re-enrolling changes nothing", () => {
    const after = JSON.parse(readFileSync(settingsPath, "utf8")) as Settings & Record<string, unknown>;
    const before = JSON.parse(OTHER_SETTINGS) as Settings & Record<string, unknown>;
    expect(after.model).toBe(before.model);
    expect(after.permissions).toEqual(before.permissions);
    expect(after.env).toEqual(before.env);
    expect(after.hooks.PreToolUse).toContainEqual(before.hooks.PreToolUse![0]);
    expect(after.hooks.Notification).toContainEqual(before.hooks.Notification![0]);
    expect(ours("PostToolUse").type).toBe("http");
    expect(ours("PreToolUse").type).toBe("command");
    const text = readFileSync(settingsPath, "utf8");
    expect(computer.tacho(["enroll", "--harness", "claude-code", "--json"]).status).toBe(0);
    expect(readFileSync(settingsPath, "utf8")).toBe(text);
  });

  it("records every step Claude Code reports, from command and HTTP hooks", async () => {
    expect(await fire("SessionStart", { source: "startup", model: "claude-sonnet-4-5" })).toEqual({});
    await fire("UserPromptSubmit", { prompt: "write the changelog and run the tests", prompt_id: "p-1" });
    const pre = await fire("PreToolUse", {
      tool_name: "Write",
      tool_input: { file_path: `${computer.home}/CHANGELOG.md`, content: "# 1.0\n" },
      tool_use_id: "toolu_01",
    });
    // A new workspace's policy has no clause for Write: no decision, so Claude Code's own permission
    // prompt runs as if Oxagen were not there (an allow here would skip it).
    expect(pre).toEqual({});
    await fire("PostToolUse", {
      tool_name: "Write",
      tool_input: { file_path: `${computer.home}/CHANGELOG.md`, content: "# 1.0\n" },
      tool_use_id: "toolu_01",
      tool_response: { filePath: `${computer.home}/CHANGELOG.md`, success: true },
      duration_ms: 12,
    });
    await fire("PermissionRequest", { tool_name: "Bash", tool_input: { command: "npm test", description: "Run tests" } });
    await fire("PreToolUse", {
      tool_name: "Bash",
      tool_input: { command: "npm test", description: "Run tests", timeout: 120000, run_in_background: false },
      tool_use_id: "toolu_02",
    });
    await fire("PostToolUseFailure", {
      tool_name: "Bash",
      tool_input: { command: "npm test" },
      tool_use_id: "toolu_02",
      error: "Exit code 1\n2 failing",
      is_interrupt: false,
      duration_ms: 8012,
    });
    await fire("SubagentStart", { agent_id: "a-1", agent_type: "Explore" });
    await fire("SubagentStop", {
      agent_id: "a-1",
      agent_type: "Explore",
      stop_hook_active: false,
      last_assistant_message: "Found the failing test.",
    });
    await fire("Stop", { stop_hook_active: false, last_assistant_message: "The changelog is written; 2 tests fail." });
    await fire("SessionEnd", { reason: "prompt_input_exit" });
    await drained(computer, Date.now());

    const id = runIdFor(hostId, "claude-code", "cc-session-1");
    await eventually(async () => {
      const res = await worker.api(`/v1/runs/${id}`);
      return res.status === 200 && ((await res.json()) as { status: string }).status === "ended";
    }, "the Claude Code run to end");
    const frames = (
      (await (await worker.api(`/v1/runs/${id}/frames?limit=1000`)).json()) as { frames: { kind: string; payload: string }[] }
    ).frames;
    expect(frames.map((f) => f.kind)).toEqual([
      "agent_start",
      "turn_start",
      "policy_decision",
      "tool_requested",
      "tool_call",
      "file_io",
      "approval_request",
      "policy_decision",
      "tool_requested",
      "tool_call",
      "command",
      "subagent_start",
      "subagent_stop",
      "turn_end",
      "agent_stop",
    ]);
    expect(JSON.parse(frames[2]!.payload)).toMatchObject({ decision: "none", mode: "enforce", rule: "default", tool_name: "Write" });
    const failed = JSON.parse(frames[9]!.payload) as { status: string; exit_code: number };
    expect(failed).toMatchObject({ status: "error", exit_code: 1 });
    expect(frames.every((f) => !f.payload.includes("write the changelog"))).toBe(true);
  }, 120_000);

  it("reassign drops the harness: only the collector's entries go", () => {
    expect(computer.tacho(["reassign", "--harness", "none", "--json"]).status).toBe(0);
    const after = JSON.parse(readFileSync(settingsPath, "utf8")) as Settings & Record<string, unknown>;
    const before = JSON.parse(OTHER_SETTINGS) as Settings & Record<string, unknown>;
    expect(after).toEqual(before);
  });
});
