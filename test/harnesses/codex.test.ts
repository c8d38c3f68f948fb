// The real Codex CLI (test/harnesses/package.json), enrolled through the installed collector with
// tacho not on its PATH, against a scripted Responses-API vendor and the real Worker. Its hooks are
// trusted the way Codex's /hooks trusts them (a trusted_hash per hook, as tacho status computes it),
// so `codex exec` runs them without --dangerously-bypass-hook-trust: a wrong hash would show here.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventLabel, trustHash } from "../../collector/harnesses/codex/trust.ts";
import { eventually } from "../support/e2e.ts";
import { type Reply, type Seen, startVendor, toolResults, type Vendor } from "../support/vendor.ts";
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

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

const shell = (cmd: string): Reply => ({ tool: { name: "exec_command", input: { cmd } } });
const SCRIPTS: Record<string, Reply[]> = {
  main: [
    shell("echo ok > ok.txt"),
    shell("rm -rf build"),
    shell("cat ok.txt; exit 3"),
    { text: "Done: ok.txt written; the clean-up was refused." },
  ],
  long: [shell("touch started && sleep 120"), { text: "unreachable" }],
};

function script(req: Seen): Reply {
  const input = JSON.stringify(req.body.input ?? []);
  const name = input.includes("[long]") ? "long" : "main";
  return SCRIPTS[name]![toolResults(req)] ?? { text: "Done." };
}

let c: Computer;
let vendor: Vendor;
let codexHome: string;
beforeAll(async () => {
  vendor = await startVendor(script);
  c = await enrolledComputer("codex", (home) => {
    codexHome = join(home, ".codex");
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      join(codexHome, "config.toml"),
      `model = "gpt-5-codex"\nmodel_provider = "scripted"\napproval_policy = "never"\nsandbox_mode = "danger-full-access"\n\n[model_providers.scripted]\nname = "scripted"\nbase_url = "${vendor.url}/v1"\nenv_key = "SCRIPTED_KEY"\nwire_api = "responses"\n`,
    );
  });
}, 300_000);
afterAll(async () => {
  await c?.stop();
  await vendor?.close();
});

const codexEnv = () => ({ HOME: c.home, PATH: HARNESS_PATH, SCRIPTED_KEY: "sk-test" });
const harness = () => (JSON.parse(c.tacho(["status", "--json", "--offline"]).stdout).harnesses as Json[])[0]!;

describe("Codex, for real", () => {
  it("status says the new hooks are not trusted yet; trusted as /hooks does, they are present", () => {
    expect(harness()).toMatchObject({ harness: "codex", config: join(codexHome, "hooks.json"), hooks: "present but not trusted" });
    const path = join(codexHome, "hooks.json");
    const hooks = JSON.parse(readFileSync(path, "utf8")).hooks as Json;
    const state = Object.entries(hooks).map(
      ([event, groups]) =>
        `[hooks.state."${path}:${eventLabel(event)}:0:0"]\ntrusted_hash = "${trustHash(event, undefined, (groups as Json[])[0]!.hooks[0])}"\n`,
    );
    writeFileSync(join(codexHome, "config.toml"), `${readFileSync(join(codexHome, "config.toml"), "utf8")}\n${state.join("\n")}`);
    expect(harness()).toMatchObject({ hooks: "present" });
  });

  it("records a session run without hook-trust bypass: allowed and denied tool calls, a failing tool, model calls; the export verifies", async () => {
    const ws = c.workspace();
    const r = await runHarness("codex", ["exec", "--skip-git-repo-check", "[main] tidy up this workspace"], { cwd: ws, env: codexEnv() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Done");
    expect(readFileSync(join(ws, "ok.txt"), "utf8")).toBe("ok\n");
    expect(existsSync(join(ws, "build", "keep.txt"))).toBe(true);
    const sessionId = /session id: (\S+)/.exec(r.stderr)?.[1];
    expect(sessionId).toBeDefined();

    const { id, frames } = await endedRun(c, "codex", sessionId!);
    expectSession(frames, []);
    // Both calls that ran finished with a tool_call (Codex's PostToolUse carries exec_command's output, not its exit code).
    expect(payloadsOf(frames, "tool_call")).toHaveLength(2);
    expect(payloadsOf(frames, "llm_call").length).toBeGreaterThanOrEqual(SCRIPTS.main!.length);

    const verified = await exportAndVerify(c, id);
    expect(verified.result, JSON.stringify(verified.result)).toMatchObject({ exit: 0, result: "valid" });
    expect(verified.status).toBe(0);
  });

  it("an interrupted turn (Codex fires Interrupt, not Stop) is closed with turn_end before the session ends", async () => {
    const ws = c.workspace();
    const run = runHarness("codex", ["exec", "--skip-git-repo-check", "[long] wait for the build"], {
      cwd: ws,
      env: codexEnv(),
      onSpawn: (pid) => {
        // Interrupt once the tool is running, as a person pressing Ctrl-C would.
        void eventually(async () => existsSync(join(ws, "started")), "the long tool to start", 120_000).then(() =>
          process.kill(pid, "SIGINT"),
        );
      },
    });
    const r = await run;
    expect(r.stderr).toContain("hook: Interrupt");
    const sessionId = /session id: (\S+)/.exec(r.stderr)![1]!;
    const { frames } = await endedRun(c, "codex", sessionId);
    const kinds = frames.map((f) => f.kind).filter((k) => k !== "llm_call" && k !== "oxagen:worktree_reconciled");
    expect(kinds).toEqual(["agent_start", "turn_start", "policy_decision", "tool_requested", "turn_end", "agent_stop"]);
    const [start] = payloadsOf(frames, "turn_start");
    expect(payloadsOf(frames, "turn_end")).toEqual([expect.objectContaining({ turn_id: start!.turn_id })]);
  });
});
