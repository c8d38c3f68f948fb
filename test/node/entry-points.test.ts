// Every entry point checks the Node version before anything else, and every command and
// subcommand answers --help. The old Node is this machine's own (the collector needs 22.18).
import { describe, expect, it } from "vitest";
import { oldNode } from "./support/old-node.ts";
import { collect, OXAGEN, run, TACHO, tempHome } from "./support/tacho.ts";

const old = oldNode();
const NEEDS = /needs Node\.js 22\.18 or later; this is Node\.js \d+\.\d+\.\d+ \(/;

describe.skipIf(!old)(`on an unsupported Node (${old?.path} ${old?.version})`, () => {
  const home = tempHome();
  const onOld = (bin: string, args: string[], input = "") => collect(old!.path, [bin, ...args], { PATH: "", ...home.env }, input);

  it("every command says in one line which Node it needs, and exits 2", async () => {
    for (const [bin, args] of [
      [TACHO, ["status"]],
      [TACHO, ["enroll", "--server", "http://127.0.0.1:1", "--token", "oxe_x"]],
      [TACHO, ["daemon", "start"]],
      [TACHO, []],
      [OXAGEN, ["verify", "bundle.json", "--server-key", "key.pub"]],
      [OXAGEN, ["agent", "enroll"]],
    ] as const) {
      const r = await onOld(bin, [...args]);
      expect(r.code, `${bin} ${args.join(" ")}`).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(r.stderr).toMatch(NEEDS);
      expect(r.stderr).not.toMatch(/ERR_|at .*\.js:\d+/);
    }
  });

  it("tacho hook still answers one valid JSON document that fails closed at each veto point and names the problem", async () => {
    const hook = async (who: string[], payload: unknown) => {
      const r = await onOld(TACHO, ["hook", ...who], typeof payload === "string" ? payload : JSON.stringify(payload));
      expect(r.code).toBe(0);
      expect(r.stdout.trimEnd().split("\n")).toHaveLength(1);
      return JSON.parse(r.stdout) as Record<string, unknown>;
    };
    const tool = { session_id: "s", tool_name: "Bash", tool_input: { command: "ls" } };

    const claude = await hook(["--harness", "claude-code"], { ...tool, hook_event_name: "PreToolUse" });
    expect(claude.hookSpecificOutput).toMatchObject({ permissionDecision: "deny", permissionDecisionReason: expect.stringMatching(NEEDS) });
    expect(await hook(["--harness", "claude-code"], { session_id: "s", hook_event_name: "UserPromptSubmit", prompt: "hi" })).toMatchObject({
      decision: "block",
      reason: expect.stringMatching(NEEDS),
    });
    expect(await hook(["--harness", "claude-code"], { session_id: "s", hook_event_name: "SessionStart" })).toMatchObject({
      continue: false,
    });

    // Codex discards an answer with any field it does not expect: the denial alone.
    expect(await hook(["--harness", "codex"], { ...tool, hook_event_name: "PreToolUse" })).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: expect.stringMatching(NEEDS),
      },
    });
    expect(await hook(["--harness", "cursor"], { hook_event_name: "preToolUse", tool_name: "Shell", tool_input: {} })).toMatchObject({
      permission: "deny",
    });
    expect(await hook(["--harness", "stella"], { event: "PreToolUse", cwd: "/", tool: { name: "bash", input: {} } })).toMatchObject({
      action: "deny",
      reason: expect.stringMatching(NEEDS),
    });
    const custom = await hook(["--agent", "my-agent"], { ...tool, hook_event_name: "PreToolUse" });
    expect(custom.error).toMatchObject({ code: "unsupported_node", message: expect.stringMatching(NEEDS) });
    // A payload it cannot read: one document that stops whichever veto point the caller reads.
    expect(await hook(["--harness", "claude-code"], "not json")).toMatchObject({
      continue: false,
      decision: "block",
      hookSpecificOutput: { permissionDecision: "deny" },
    });
  });
});

describe("--help", () => {
  const home = tempHome();
  it("every command and subcommand prints its usage on stdout and exits 0 (and does not run)", async () => {
    const cases = [
      [TACHO, ["--help"]],
      [TACHO, ["enroll", "--help"]],
      [TACHO, ["status", "--help"]],
      [TACHO, ["hook", "--help"]],
      [TACHO, ["hook", "--harness", "codex", "-h"]],
      [TACHO, ["reassign", "--help"]],
      [TACHO, ["daemon", "--help"]],
      [TACHO, ["daemon", "start", "--help"]],
      [TACHO, ["daemon", "install", "--help"]],
      [OXAGEN, ["--help"]],
      [OXAGEN, ["verify", "--help"]],
      [OXAGEN, ["agent", "--help"]],
      [OXAGEN, ["agent", "enroll", "--help"]],
      [OXAGEN, ["agent", "backfill", "--help"]],
    ] as const;
    const results = await Promise.all(cases.map(([bin, args]) => run(bin, [...args], { env: home.env })));
    cases.forEach(([bin, args], i) => {
      const r = results[i]!;
      const what = `${bin.endsWith("tacho.js") ? "tacho" : "oxagen"} ${args.join(" ")}`;
      expect(r.code, `${what}: ${r.stderr}`).toBe(0);
      expect(r.stderr, what).toBe("");
      expect(r.stdout, what).toMatch(/^usage: /);
    });
    const enroll = await run(TACHO, ["enroll", "--help"], { env: home.env });
    expect(enroll.stdout).toContain("--no-start");
    expect(enroll.stdout).toContain("oxe_");
  });
});
