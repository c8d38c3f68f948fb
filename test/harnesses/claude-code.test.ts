// The real Claude Code CLI (test/harnesses/package.json), enrolled through the installed collector
// with tacho not on its PATH, against a scripted model vendor and the real Worker: allowed and
// denied tool calls, and every frame of the coverage table that Claude Code produces here; the run
// is then exported and checked with the installed `oxagen verify`.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastUserText, type Reply, type Seen, startVendor, toolResults, type Vendor } from "../support/vendor.ts";
import {
  type Computer,
  enrolledComputer,
  endedRun,
  expectSession,
  exportAndVerify,
  HARNESS_PATH,
  payloadsOf,
  runHarness,
} from "./support.ts";

// The main conversation's steps, one per tool result it has received so far, in workspace `ws`.
let ws = "";
const main = (): Reply[] => [
  { tool: { name: "Bash", input: { command: "echo ok > ok.txt", description: "write ok.txt" } } },
  { tool: { name: "Bash", input: { command: "rm -rf build", description: "clean" } } },
  { tool: { name: "Write", input: { file_path: join(ws, "notes.md"), content: "# notes\n" } } },
  { tool: { name: "Read", input: { file_path: join(ws, "ok.txt") } } },
  { tool: { name: "Bash", input: { command: "exit 3", description: "fail on purpose" } } },
  {
    tool: { name: "Agent", input: { description: "count files", prompt: "[sub] count the files here", subagent_type: "general-purpose" } },
  },
  { text: "Done: ok.txt written; the clean-up was refused." },
];

// A session run without --allowedTools: an explicit allow clause, then a call no clause decides.
const own = (): Reply[] => [
  { tool: { name: "Bash", input: { command: "echo yes > allowed.txt", description: "write allowed.txt" } } },
  { tool: { name: "Bash", input: { command: "touch undecided.txt", description: "write undecided.txt" } } },
  { text: "Done with both." },
];

function script(req: Seen): Reply {
  const first = lastUserText({ ...req, body: { ...req.body, messages: (req.body.messages ?? []).slice(0, 1) } });
  if (first.includes("[sub]")) return { text: "There are 2 files." };
  if (first.includes("[own]")) return own()[toolResults(req)] ?? { text: "Done." };
  if (!first.includes("[main]")) return { text: "ok" };
  return main()[toolResults(req)] ?? { text: "Done." };
}

let c: Computer;
let vendor: Vendor;
const claudeEnv = () => ({
  HOME: c.home,
  PATH: HARNESS_PATH,
  ANTHROPIC_BASE_URL: vendor.url,
  ANTHROPIC_API_KEY: "sk-test",
  DISABLE_TELEMETRY: "1",
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  DISABLE_AUTOUPDATER: "1",
});
beforeAll(async () => {
  vendor = await startVendor(script);
  c = await enrolledComputer("claude-code");
}, 300_000);
afterAll(async () => {
  await c?.stop();
  await vendor?.close();
});

describe("Claude Code, for real", () => {
  it("enroll wrote absolute hook commands that run without tacho (or a new enough Node) on the PATH", () => {
    const settings = JSON.parse(readFileSync(join(c.home, ".claude", "settings.json"), "utf8"));
    const command = settings.hooks.PreToolUse[0].hooks[0].command as string;
    expect(command).toMatch(/^\/\S+\/node \/\S+\/oxagen-collector\/bin\/tacho\.js hook --harness claude-code$/);
    const status = JSON.parse(c.tacho(["status", "--json", "--offline"]).stdout);
    expect(status.harnesses).toEqual([{ harness: "claude-code", config: join(c.home, ".claude", "settings.json"), hooks: "present" }]);
    expect(status.daemon.state).toBe("running");
  });

  it("records a session: allowed, denied and asked-about tool calls, a failed tool, a subagent, model calls, the worktree; the export verifies", async () => {
    ws = c.workspace();
    const r = await runHarness("claude", ["-p", "[main] tidy up this workspace", "--output-format", "json", "--allowedTools", "Bash"], {
      cwd: ws,
      env: claudeEnv(),
    });
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as { session_id: string; result: string };
    expect(result.result).toContain("Done");
    // The allowed call ran; the denied one did not.
    expect(readFileSync(join(ws, "ok.txt"), "utf8")).toBe("ok\n");
    expect(existsSync(join(ws, "build", "keep.txt"))).toBe(true);
    // The policy asks a person about Write; in -p there is nobody to answer, so it does not run.
    expect(existsSync(join(ws, "notes.md"))).toBe(false);

    const { id, frames } = await endedRun(c, "claude-code", result.session_id);
    expectSession(frames, ["file_io", "subagent_start", "subagent_stop", "oxagen:worktree_reconciled"]);
    const decisions = payloadsOf(frames, "policy_decision");
    expect(decisions).toContainEqual(expect.objectContaining({ decision: "ask", rule: "ask-write", tool_name: "Write" }));
    const calls = payloadsOf(frames, "tool_call");
    expect(calls).toContainEqual(expect.objectContaining({ tool_name: "Bash", status: "ok" }));
    expect(calls).toContainEqual(expect.objectContaining({ tool_name: "Bash", status: "error", exit_code: 3 }));
    expect(payloadsOf(frames, "command").length).toBeGreaterThanOrEqual(2);
    expect(payloadsOf(frames, "agent_stop")).toEqual([expect.objectContaining({ outcome: "completed" })]);
    // One model call per vendor request, from the transcript.
    expect(payloadsOf(frames, "llm_call").length).toBeGreaterThanOrEqual(main().length);

    const verified = await exportAndVerify(c, id);
    expect(verified.result, JSON.stringify(verified.result)).toMatchObject({ exit: 0, result: "valid" });
    expect(verified.status).toBe(0);
  });

  it("keeps Claude Code's own permission flow when no clause decides: an allow clause skips its prompt, an undecided call gets its usual one", async () => {
    const dir = c.workspace();
    // No --allowedTools: in -p nobody can answer Claude Code's own prompt, so a call it would ask about does not run.
    const r = await runHarness("claude", ["-p", "[own] write two files", "--output-format", "json"], { cwd: dir, env: claudeEnv() });
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as { session_id: string; permission_denials?: { tool_name: string }[] };
    expect(readFileSync(join(dir, "allowed.txt"), "utf8")).toBe("yes\n");
    // Had the hook answered "allow" for the undecided call (as it did before), the file would exist.
    expect(existsSync(join(dir, "undecided.txt"))).toBe(false);
    expect(result.permission_denials).toEqual([expect.objectContaining({ tool_name: "Bash" })]);

    const { frames } = await endedRun(c, "claude-code", result.session_id);
    const decisions = payloadsOf(frames, "policy_decision");
    expect(decisions).toContainEqual(expect.objectContaining({ decision: "allow", rule: "allow-echo", tool_name: "Bash" }));
    expect(decisions).toContainEqual(expect.objectContaining({ decision: "none", rule: "default", tool_name: "Bash" }));
    // The recorder did not refuse it: no token_denied; the harness's own flow did.
    expect(payloadsOf(frames, "token_denied")).toEqual([]);
  });
});
