// The rollout trial (issue 21) with the real Claude Code CLI: a developer's own ~/.claude/settings.json
// (their hooks, their env, their ANTHROPIC_BASE_URL pointing at their own vendor), `tacho enroll
// --gateway`, a real `claude -p` session whose model calls go through the gateway on to that vendor
// and are recorded, then `tacho unenroll`: settings.json byte-identical, and Claude Code still works.
// Beside it: a developer whose base URL is in the shell (Claude Code's settings env wins over the
// shell's, so the gateway still gets the calls and forwards them there), and a second enrollment on
// the same hook port, whose Claude Code posts its tool results to the other recorder (401).
import { existsSync, readFileSync } from "node:fs";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/e2e.ts";
import { freePort } from "../support/recorder.ts";
import { type Reply, type Seen, startVendor, toolResults, type Vendor } from "../support/vendor.ts";
import { type Computer, enrolledComputer, endedRun, HARNESS_PATH, payloadsOf, runHarness, userOf } from "./support.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

function script(req: Seen): Reply {
  if (toolResults(req) > 0) return { text: "Done: wrote the flag." };
  if (!JSON.stringify(req.body.messages ?? []).includes("[trial]")) return { text: "ok" };
  return { tool: { name: "Bash", input: { command: 'echo "flag=$MY_FLAG" > flag.txt', description: "write the flag" } } };
}

const settingsOf = (home: string) => join(home, ".claude", "settings.json");
/** The developer's own settings, as they wrote them: their indentation, their key order, no final newline. */
const ownSettings = (vendorUrl: string, base: boolean) =>
  [
    "{",
    '    "cleanupPeriodDays": 30,',
    '    "env": {',
    ...(base ? [`        "ANTHROPIC_BASE_URL": "${vendorUrl}",`] : []),
    '        "ANTHROPIC_CUSTOM_HEADERS": "x-team: blue",',
    '        "MY_FLAG": "on"',
    "    },",
    '    "hooks": {',
    '        "PostToolUse": [',
    '            { "matcher": "Bash", "hooks": [ { "type": "command", "command": "echo mine >> \\"$HOME/own-hook.log\\"" } ] }',
    "        ]",
    "    }",
    "}",
  ].join("\n");
const write = (path: string, text: string) => {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
};

let vendor: Vendor;
let dev: Computer;
let before = "";
const quiet = { DISABLE_TELEMETRY: "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1" };
/** Claude Code's environment: nothing names a base URL but the settings (and `shell`). */
const claudeEnv = (c: Computer, shell: Record<string, string> = {}) => ({
  HOME: c.home,
  PATH: HARNESS_PATH,
  ANTHROPIC_API_KEY: "sk-ant-test",
  ...quiet,
  ...shell,
});
const trial = (c: Computer, shell?: Record<string, string>) =>
  runHarness("claude", ["-p", "[trial] write the flag", "--output-format", "json", "--allowedTools", "Bash"], {
    cwd: c.workspace(),
    env: claudeEnv(c, shell),
  });
const sessionOf = (r: { stdout: string }) => (JSON.parse(r.stdout) as { session_id: string }).session_id;
const seenBy = (session: string) => vendor.seen.filter((s) => s.headers["x-claude-code-session-id"] === session);

/** Waits until the recorder holds nothing undelivered, then stops it (unenroll needs both). */
async function delivered(c: Computer): Promise<void> {
  await eventually(async () => {
    const p = JSON.parse(c.tacho(["status", "--json", "--offline"]).stdout).daemon?.recorder?.pending as Json | null;
    return p !== null && p !== undefined && Object.values(p).every((n) => n === 0);
  }, "the recorder to deliver everything it recorded");
  c.stopRecorder();
}

beforeAll(async () => {
  vendor = await startVendor(script);
  dev = await enrolledComputer(
    "claude-code",
    (home) => {
      before = ownSettings(vendor.url, true);
      write(settingsOf(home), before);
    },
    {},
    { args: ["--gateway"] },
  );
}, 300_000);
afterAll(async () => {
  await dev?.stop();
  await vendor?.close();
});

describe("a developer's own Claude Code setup, enrolled with --gateway and unenrolled", () => {
  it("enroll keeps the developer's base URL as this computer's upstream, says so, and leaves their hooks and env in place", () => {
    expect(dev.enrolled.status).toBe(0);
    expect((dev.enrolled.answer.gateway as Json).upstreams).toEqual([
      { vendor: "anthropic", url: vendor.url, from: `${settingsOf(dev.home)} env.ANTHROPIC_BASE_URL`, replaced: true },
    ]);
    const settings = JSON.parse(readFileSync(settingsOf(dev.home), "utf8")) as Json;
    expect(settings.env.ANTHROPIC_BASE_URL).toBe(`http://127.0.0.1:${(dev.enrolled.answer.ports as Json).gateway}`);
    expect(settings.env.ANTHROPIC_CUSTOM_HEADERS).toMatch(/^x-team: blue\nx-oxagen-hook-secret: \S+$/);
    expect(settings.env.MY_FLAG).toBe("on");
    expect(settings.hooks.PostToolUse[0]).toEqual(JSON.parse(before).hooks.PostToolUse[0]);
    const status = JSON.parse(dev.tacho(["status", "--json", "--offline"]).stdout) as Json;
    expect(status.gateway.upstreams.anthropic.url).toBe(vendor.url);
    expect(status.gateway.routed).toEqual([{ harness: "claude-code", configured: true }]);
    // The workspace's tools as Claude Code's user-scope MCP server oxagen, at the gateway.
    expect(status.gateway.mcp_servers).toEqual([{ harness: "claude-code", present: true }]);
    const claudeJson = JSON.parse(readFileSync(join(dev.home, ".claude.json"), "utf8")) as Json;
    expect(claudeJson.mcpServers.oxagen.url).toBe(`http://127.0.0.1:${(dev.enrolled.answer.ports as Json).gateway}/mcp`);
  });

  it("a real session: its calls go through the gateway to the developer's own vendor with their headers, their hook and env still work, and the run is recorded", async () => {
    const r = await trial(dev);
    expect(r.code, r.stderr).toBe(0);
    const session = sessionOf(r);
    const mine = seenBy(session);
    expect(mine.length).toBeGreaterThanOrEqual(2);
    expect(mine.every((s) => s.headers["x-team"] === "blue" && s.headers["x-oxagen-hook-secret"] === undefined)).toBe(true);
    expect(readFileSync(join(dev.home, "own-hook.log"), "utf8")).toBe("mine\n");
    expect(readFileSync(join(dev.home, "ws-1", "flag.txt"), "utf8")).toBe("flag=on\n");
    const { id, frames } = await endedRun(dev, "claude-code", session);
    expect(payloadsOf(frames, "llm_call").map((p) => p.path)).toEqual(mine.map(() => "gateway"));
    expect(payloadsOf(frames, "tool_call")).toEqual([expect.objectContaining({ tool_name: "Bash", status: "ok" })]);
    expect(payloadsOf(frames, "command")).toHaveLength(1);
    expect(payloadsOf(frames, "telemetry_gap")).toEqual([]);
    expect(((await (await dev.worker.api(`/v1/runs/${id}`)).json()) as Json).tier).toMatchObject({ value: "gateway" });
  });

  it("tacho unenroll gives settings.json back byte for byte, and Claude Code goes straight to the developer's vendor again", async () => {
    await delivered(dev);
    const out = dev.tacho(["unenroll", "--json"]);
    expect(out.status, out.stderr).toBe(0);
    expect(readFileSync(settingsOf(dev.home), "utf8")).toBe(before);
    expect(existsSync(join(dev.home, ".config", "oxagen", "tacho", "host.json"))).toBe(false);
    // Claude Code's own state in ~/.claude.json (written by its sessions meanwhile) stays; only tacho's server goes.
    const claudeJson = JSON.parse(readFileSync(join(dev.home, ".claude.json"), "utf8")) as Json;
    expect(claudeJson.mcpServers?.oxagen).toBeUndefined();
    expect(Object.keys(claudeJson).length).toBeGreaterThan(0);
    const r = await trial(dev);
    expect(r.code, r.stderr).toBe(0);
    expect(seenBy(sessionOf(r)).length).toBeGreaterThanOrEqual(2);
  });
});

describe("two more developers on the same server", () => {
  let shell: Computer;
  let neighbour: Computer;
  beforeAll(async () => {
    // This one's base URL is in the shell, not in the settings: enroll runs in that shell.
    shell = await userOf(dev.pkg, dev.worker, "claude-code", (home) => write(settingsOf(home), ownSettings(vendor.url, false)), {
      args: ["--gateway"],
      env: { ANTHROPIC_BASE_URL: vendor.url },
    });
  }, 300_000);
  afterAll(() => {
    shell?.stopRecorder();
    neighbour?.stopRecorder();
  });

  it("a base URL in the shell: the settings' env wins over it in Claude Code, so the calls reach the gateway, which forwards them there", async () => {
    expect((shell.enrolled.answer.gateway as Json).upstreams).toEqual([
      expect.objectContaining({ vendor: "anthropic", url: vendor.url, replaced: false }),
    ]);
    const r = await trial(shell, { ANTHROPIC_BASE_URL: vendor.url });
    expect(r.code, r.stderr).toBe(0);
    const session = sessionOf(r);
    const { frames } = await endedRun(shell, "claude-code", session);
    // Had the shell's URL won, Claude Code would have called the vendor directly: no gateway frame.
    expect(payloadsOf(frames, "llm_call").map((p) => p.path)).toEqual(seenBy(session).map(() => "gateway"));
  });

  it("an enrollment on another's hook port: enroll says its recorder cannot listen, and its session's record has a gap where the tool results (posted to the other recorder, 401) are missing", async () => {
    const hooks = (shell.enrolled.answer.ports as Json).hooks as number;
    neighbour = await userOf(dev.pkg, dev.worker, "claude-code", () => {}, {
      args: ["--hooks-port", String(hooks), "--gateway-port", String(await freePort())],
    });
    expect(neighbour.enrolled.status).toBe(1);
    expect(neighbour.enrolled.answer.cannot_listen).toEqual([expect.stringContaining(`hook port 127.0.0.1:${hooks}`)]);
    const r = await trial(neighbour, { ANTHROPIC_BASE_URL: vendor.url });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(neighbour.home, "ws-1", "flag.txt"), "utf8")).toBe("flag=\n");
    const { frames } = await endedRun(neighbour, "claude-code", sessionOf(r));
    expect(payloadsOf(frames, "tool_requested")).toEqual([expect.objectContaining({ tool_name: "Bash" })]);
    expect(payloadsOf(frames, "tool_call")).toEqual([]);
    expect(payloadsOf(frames, "telemetry_gap")).toEqual([
      expect.objectContaining({ path: "recorder", detail: expect.stringContaining(`HTTP hook port 127.0.0.1:${hooks}`) }),
    ]);
  });
});
