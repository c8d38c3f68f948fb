// The real Claude Code and Codex CLIs with their model calls pointed at the recorder's gateway by
// `tacho enroll --gateway` (nothing in their environment names a base URL), the workspace policy's
// `upstreams` sending the calls on to a scripted vendor, and the real Worker: each model call is
// recorded once, by the gateway; the run reaches the gateway tier; a refusal reaches the screen.
import { editablePolicy } from "../../protocol/index.ts";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../support/e2e.ts";
import { type Reply, type Seen, startVendor, toolResults, type Vendor } from "../support/vendor.ts";
import { type Computer, enrolledComputer, endedRun, HARNESS_PATH, payloadsOf, runHarness } from "./support.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

function script(req: Seen): Reply {
  if (toolResults(req) > 0) return { text: "Done: echoed." };
  const text = JSON.stringify(req.api === "anthropic" ? (req.body.messages ?? []) : (req.body.input ?? []));
  if (!text.includes("[gw]")) return { text: "ok" };
  return req.api === "anthropic"
    ? { tool: { name: "Bash", input: { command: "echo hi", description: "say hi" } } }
    : { tool: { name: "exec_command", input: { cmd: "echo hi" } } };
}

let c: Computer;
let vendor: Vendor;
beforeAll(async () => {
  vendor = await startVendor(script);
  c = await enrolledComputer(
    "claude-code,codex",
    (home) => {
      mkdirSync(join(home, ".codex"), { recursive: true });
      writeFileSync(
        join(home, ".codex", "config.toml"),
        `model = "gpt-5-codex"\napproval_policy = "never"\nsandbox_mode = "danger-full-access"\n`,
      );
    },
    { upstreams: { anthropic: vendor.url, openai: vendor.url } },
  );
  const routed = c.tacho(["enroll", "--harness", "claude-code,codex", "--gateway", "--json"]);
  if (routed.status !== 0) throw new Error(`tacho enroll --gateway: ${routed.stderr}`);
}, 300_000);
afterAll(async () => {
  await c?.stop();
  await vendor?.close();
});

const claudeEnv = () => ({
  HOME: c.home,
  PATH: HARNESS_PATH,
  ANTHROPIC_API_KEY: "sk-ant-test",
  DISABLE_TELEMETRY: "1",
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  DISABLE_AUTOUPDATER: "1",
});
const codexEnv = () => ({ HOME: c.home, PATH: HARNESS_PATH, OPENAI_API_KEY: "sk-test" });
const run = (id: string) => c.worker.api(`/v1/runs/${id}`).then((r) => r.json() as Promise<Json>);

describe("the gateway, with the real harnesses", () => {
  it("Claude Code: every model call goes through the gateway and is recorded once; the run reaches the gateway tier", async () => {
    const settings = JSON.parse(readFileSync(join(c.home, ".claude", "settings.json"), "utf8")) as Json;
    expect(settings.env.ANTHROPIC_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const before = vendor.seen.length;
    const ws = c.workspace();
    const r = await runHarness("claude", ["-p", "[gw] say hi", "--output-format", "json", "--allowedTools", "Bash"], {
      cwd: ws,
      env: claudeEnv(),
    });
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as { session_id: string; result: string };
    expect(result.result).toContain("Done");
    const mine = vendor.seen.slice(before).filter((s) => s.headers["x-claude-code-session-id"] === result.session_id);
    expect(mine.length).toBeGreaterThanOrEqual(2);
    // The enrollment's secret reached the gateway (it took the calls) and went no further.
    expect(mine.every((s) => s.headers["x-oxagen-hook-secret"] === undefined)).toBe(true);
    const { id, frames } = await endedRun(c, "claude-code", result.session_id);
    const calls = payloadsOf(frames, "llm_call");
    // One frame per vendor response: the gateway's; the transcript reader saw the same message ids and wrote none.
    expect(calls.map((p) => p.path)).toEqual(mine.map(() => "gateway"));
    expect(new Set(calls.map((p) => p.message_id)).size).toBe(calls.length);
    expect(calls[0]).toMatchObject({
      vendor: "anthropic",
      forwarded: true,
      status: 200,
      stream: true,
      usage: { input_tokens: 120, output_tokens: 30 },
    });
    expect((await run(id)).tier).toMatchObject({ value: "gateway" });
  });

  it("Codex: its model provider is the gateway; its calls are recorded once (the rollout's response ids match); the run reaches the gateway tier", async () => {
    const before = vendor.seen.length;
    const ws = c.workspace();
    const r = await runHarness("codex", ["exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "[gw] say hi"], {
      cwd: ws,
      env: codexEnv(),
    });
    expect(r.code, r.stderr).toBe(0);
    const sessionId = /session id: (\S+)/.exec(r.stderr)![1]!;
    const mine = vendor.seen.slice(before).filter((s) => s.path === "/v1/responses");
    expect(mine.length).toBeGreaterThanOrEqual(2);
    expect(mine[0]!.headers.authorization).toBe("Bearer sk-test");
    expect(mine.every((s) => s.headers["x-oxagen-hook-secret"] === undefined)).toBe(true);
    const { id, frames } = await endedRun(c, "codex", sessionId);
    const calls = payloadsOf(frames, "llm_call");
    expect(calls.map((p) => p.path)).toEqual(mine.map(() => "gateway"));
    expect(calls.map((p) => p.message_id)).toEqual(mine.map((_, i) => `resp_${before + i + 1}`));
    expect((await run(id)).tier).toMatchObject({ value: "gateway" });
  });

  it("a model off the workspace's allow-list: the gateway refuses it and each harness shows the reason", async () => {
    const cached = () => JSON.parse(c.tacho(["status", "--json", "--offline"]).stdout).policy?.etag as string | undefined;
    const was = cached();
    const current = (await (await c.worker.api(`/v1/workspaces/${c.worker.workspace}/policy`)).json()) as { policy: Json };
    const editable = editablePolicy(current.policy);
    const put = await c.worker.api(`/v1/workspaces/${c.worker.workspace}/policy`, {
      method: "PUT",
      body: JSON.stringify({ ...editable, models: ["some-other-model"] }),
    });
    expect(put.status).toBe(200);
    // The host's own signed copy (its etag is not the workspace's) changes once the recorder fetched it.
    await eventually(async () => cached() !== was, "the recorder to cache the new policy", 60_000);
    const before = vendor.seen.length;
    const claude = await runHarness("claude", ["-p", "[gw] say hi", "--output-format", "json"], { cwd: c.workspace(), env: claudeEnv() });
    // Shown as a refusal, at once: not as a credential problem, not retried.
    expect(`${claude.stdout}${claude.stderr}`).toContain("is not on the workspace's allow-list");
    expect(`${claude.stdout}${claude.stderr}`).not.toMatch(/authenticat/i);
    const codex = await runHarness("codex", ["exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "[gw] say hi"], {
      cwd: c.workspace(),
      env: codexEnv(),
    });
    expect(`${codex.stdout}${codex.stderr}`).toContain("is not on the workspace's allow-list");
    expect(`${codex.stdout}${codex.stderr}`).not.toMatch(/Reconnecting|authenticat/i);
    expect(vendor.seen.slice(before).filter((s) => s.path.endsWith("/messages") || s.path.endsWith("/responses"))).toEqual([]);

    // A budget with less room than one call can cost (not yet exhausted: the hooks let the prompt through):
    // the gateway refuses the call, and each harness shows it as a spend refusal, with the reason.
    const wasAgain = cached();
    // One millionth of a dollar above what the workspace spent today (the calls of the tests before).
    // D1's spend rows are a projection, a few seconds behind the runs: wait until they count every model call the vendor saw.
    const modelCalls = vendor.seen.filter((s) => s.path.endsWith("/messages") || s.path.endsWith("/responses")).length;
    const spend = await eventually(async () => {
      const x = (await (await c.worker.api("/v1/spend")).json()) as { rows: { microusd: number; calls: number }[] };
      return x.rows.reduce((a, r) => a + r.calls, 0) >= modelCalls ? x : null;
    }, "the earlier calls' spend in D1");
    const spent = spend.rows.reduce((a, r) => a + r.microusd, 0);
    const zero = await c.worker.api(`/v1/workspaces/${c.worker.workspace}/policy`, {
      method: "PUT",
      body: JSON.stringify({
        ...editable,
        models: null,
        budgets: [{ id: "none-left", scope: "workspace", window: "day", limit_microusd: spent + 1 }],
      }),
    });
    expect(zero.status).toBe(200);
    await eventually(async () => cached() !== wasAgain, "the recorder to cache the budget", 60_000);
    const claudeBudget = await runHarness("claude", ["-p", "[gw] say hi", "--output-format", "json"], {
      cwd: c.workspace(),
      env: claudeEnv(),
    });
    console.log(`Claude Code shows a spend refusal as: ${JSON.parse(claudeBudget.stdout).result}`);
    // The gateway's refusal: the prompt itself passed the hooks (the budget is not exhausted yet).
    expect(`${claudeBudget.stdout}${claudeBudget.stderr}`).toContain("Oxagen refused this model call: the budget none-left");
    expect(`${claudeBudget.stdout}${claudeBudget.stderr}`).not.toMatch(/authenticat/i);
    const codexBudget = await runHarness("codex", ["exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "[gw] say hi"], {
      cwd: c.workspace(),
      env: codexEnv(),
    });
    console.log(
      `Codex shows a spend refusal as: ${`${codexBudget.stdout}${codexBudget.stderr}`
        .split("\n")
        .filter((l) => l.startsWith("ERROR"))
        .join(" | ")}`,
    );
    expect(`${codexBudget.stdout}${codexBudget.stderr}`).toContain("Quota exceeded");
  });
});
