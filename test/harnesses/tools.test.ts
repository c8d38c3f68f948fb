// The real Claude Code and Codex CLIs calling a workspace tool, `mcp__oxagen__refund`, through the
// MCP server entry `tacho enroll --gateway` wrote (Claude Code's user scope, Codex's config.toml):
// the scripted vendor asks for the tool, the gateway carries the call to the real Worker, whose tool
// calls a local payments API with a credential only the workspace holds. The run's chain holds the
// gateway's tool_call with the meter row's call id and hashes; a call over the clause's cap is
// refused, the model sees why, and the chain holds the policy_decision; the credential is nowhere.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { mkdirSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { filesText } from "../support/e2e.ts";
import { startToolUpstreams, type ToolUpstreams } from "../support/tool-upstreams.ts";
import { type Reply, type Seen, startVendor, toolResults, type Vendor } from "../support/vendor.ts";
import { type Computer, enrolledComputer, endedRun, HARNESS_PATH, payloadsOf, runHarness } from "./support.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

const SECRET = "sk_live_harness_payments_key_5f3c9a1e7b2d4086";
const tag = () => `h${Math.random().toString(16).slice(2, 14)}`;

/**
 * The name the harness offers the model the tool under: Claude Code's `mcp__oxagen__refund`; Codex
 * 0.169 puts an MCP server's tools in a Responses API namespace (`mcp__oxagen`, tool `refund`).
 */
function refundTool(req: Seen): { name: string; namespace?: string } {
  for (const t of (req.body.tools ?? []) as Json[]) {
    if (t.type === "namespace" && Array.isArray(t.tools) && t.tools.some((f: Json) => f.name === "refund"))
      return { name: "refund", namespace: t.name };
    if (typeof t.name === "string" && t.name.endsWith("refund")) return { name: t.name };
  }
  return { name: "mcp__oxagen__refund" };
}

/** What the model last got back from a tool, as text. */
function lastToolResult(req: Seen): string {
  if (req.api === "anthropic") {
    const results = (req.body.messages ?? [])
      .flatMap((m: Json) => (Array.isArray(m.content) ? m.content : []))
      .filter((c: Json) => c.type === "tool_result");
    return JSON.stringify(results.at(-1)?.content ?? "");
  }
  const outs = (req.body.input ?? []).filter((i: Json) => i.type === "function_call_output");
  return JSON.stringify(outs.at(-1)?.output ?? "");
}

let amountTag = tag();
function script(req: Seen): Reply {
  const m = /\[refund (\d+)\]/.exec(JSON.stringify(req.api === "anthropic" ? (req.body.messages ?? []) : (req.body.input ?? [])));
  if (!m) return { text: "ok" };
  if (toolResults(req) > 0) return { text: `Done: ${lastToolResult(req).slice(0, 600)}` };
  return { tool: { ...refundTool(req), input: { charge: "ch_9", amount: Number(m[1]), tag: amountTag } } };
}

let c: Computer;
let vendor: Vendor;
let upstreams: ToolUpstreams;
beforeAll(async () => {
  [vendor, upstreams] = await Promise.all([startVendor(script), startToolUpstreams()]);
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
  const refund = {
    name: "refund",
    description: "Refunds part of a charge, in cents.",
    input_schema: {
      type: "object",
      properties: { charge: { type: "string" }, amount: { type: "integer" }, tag: { type: "string" } },
      required: ["charge", "amount"],
    },
    binding: { kind: "http", method: "POST", origin: upstreams.http, path: "/v1/charges/{charge}/refunds" },
    credential: SECRET,
    access: [{ id: "cap", decision: "allow", arguments: { amount: { maximum: 5000 } } }],
  };
  const made = await c.worker.api("/v1/tools", { method: "POST", body: JSON.stringify(refund) });
  if (made.status !== 201) throw new Error(`tool: ${made.status} ${await made.text()}`);
  const routed = c.tacho(["enroll", "--harness", "claude-code,codex", "--gateway", "--json"]);
  if (routed.status !== 0) throw new Error(`tacho enroll --gateway: ${routed.stderr}`);
}, 300_000);
afterAll(async () => {
  await c?.stop();
  await vendor?.close();
  await upstreams?.close();
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
const hits = async (t: string) => (await (await fetch(`${upstreams.http}/hits/${t}`)).json()) as { hits: number };

type Row = {
  id: string;
  status: string;
  rule: string | null;
  reason_sha256: string | null;
  input_sha256: string;
  output_sha256: string | null;
};
const meterRows = async (run: string) => ((await (await c.worker.api(`/v1/tool-calls?run=${run}`)).json()) as { calls: Row[] }).calls;

/** Checks one harness session's record against the server's meter: one gateway frame per call, the same ids and hashes. */
async function checkRecord(harness: string, sessionId: string, expectRefusal: boolean) {
  const { id, frames } = await endedRun(c, harness, sessionId);
  const rows = await meterRows(id);
  const calls = payloadsOf(frames, "tool_call").filter((p) => p.server === "oxagen" || String(p.tool_name).includes("refund"));
  const decisions = payloadsOf(frames, "policy_decision").filter((p) => p.subject === "oxagen_tool");
  if (expectRefusal) {
    expect(rows).toEqual([expect.objectContaining({ status: "refused", rule: "cap" })]);
    expect(decisions).toEqual([
      expect.objectContaining({ path: "gateway", rule: "cap", call_id: rows[0]!.id, reason_sha256: rows[0]!.reason_sha256 }),
    ]);
    expect(decisions[0]!.reason).toBeUndefined();
    expect(calls).toEqual([]);
  } else {
    expect(rows).toEqual([expect.objectContaining({ status: "ok" })]);
    // One call, the gateway's (the harness's own PostToolUse was taken as the same call).
    expect(calls).toEqual([
      expect.objectContaining({ path: "gateway", tool_name: "refund", server: "oxagen", status: "ok", call_id: rows[0]!.id }),
    ]);
    expect((calls[0]!.input as Json).sha256).toBe(rows[0]!.input_sha256);
    expect((calls[0]!.output as Json).sha256).toBe(rows[0]!.output_sha256);
    expect(decisions).toEqual([]);
    // The harness's own request of the tool is in the same run, with the same tool_use_id.
    const requested = payloadsOf(frames, "tool_requested").find((p) => String(p.tool_name).endsWith("refund"));
    expect(calls[0]!.tool_use_id).toBeTruthy();
    expect(requested?.tool_use_id).toBe(calls[0]!.tool_use_id);
  }
  expect(JSON.stringify(frames)).not.toContain(SECRET);
  expect(JSON.stringify(rows)).not.toContain(SECRET);
  return { id, frames };
}

describe("workspace tools through the gateway, with the real harnesses", () => {
  it("Claude Code: calls mcp__oxagen__refund from its user-scope entry; the call is recorded once, as the meter has it; a call over the cap is refused where the model can read it", async () => {
    const json = JSON.parse(readFileSync(join(c.home, ".claude.json"), "utf8")) as Json;
    expect(json.mcpServers.oxagen).toMatchObject({ type: "http", url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/) });
    for (const [amount, refused] of [
      [120, false],
      [9000, true],
    ] as const) {
      amountTag = tag();
      const r = await runHarness(
        "claude",
        ["-p", `[refund ${amount}] please`, "--output-format", "json", "--allowedTools", "mcp__oxagen__refund"],
        {
          cwd: c.workspace(),
          env: claudeEnv(),
        },
      );
      expect(r.code, `${r.stderr}${r.stdout}`).toBe(0);
      const result = JSON.parse(r.stdout) as { session_id: string; result: string };
      if (refused) expect(result.result).toContain("Oxagen refused this call (cap)");
      else expect(result.result).toContain("refunds");
      expect(await hits(amountTag)).toEqual({ hits: refused ? 0 : 1, aborted: 0 });
      expect(`${r.stdout}${r.stderr}`).not.toContain(SECRET);
      await checkRecord("claude-code", result.session_id, refused);
    }
    // The key never reached the model vendor (what the model saw) nor anything on this computer.
    expect(JSON.stringify(vendor.seen)).not.toContain(SECRET);
    expect(filesText(c.home)).not.toContain(SECRET);
  });

  it("Codex: calls the tool from its [mcp_servers.oxagen] entry; recorded once, as the meter has it; a call over the cap is refused where the model can read it", async () => {
    expect(readFileSync(join(c.home, ".codex", "config.toml"), "utf8")).toContain("[mcp_servers.oxagen]");
    for (const [amount, refused] of [
      [130, false],
      [9100, true],
    ] as const) {
      amountTag = tag();
      const before = vendor.seen.length;
      const r = await runHarness(
        "codex",
        ["exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", `[refund ${amount}] please`],
        {
          cwd: c.workspace(),
          env: codexEnv(),
        },
      );
      expect(r.code, `${r.stderr}${r.stdout}`).toBe(0);
      const sessionId = /session id: (\S+)/.exec(r.stderr)![1]!;
      const last = vendor.seen.slice(before).at(-1)!;
      if (refused) expect(lastToolResult(last)).toContain("Oxagen refused this call (cap)");
      expect(await hits(amountTag)).toEqual({ hits: refused ? 0 : 1, aborted: 0 });
      expect(`${r.stdout}${r.stderr}`).not.toContain(SECRET);
      await checkRecord("codex", sessionId, refused);
    }
    expect(JSON.stringify(vendor.seen)).not.toContain(SECRET);
    expect(filesText(c.home)).not.toContain(SECRET);
  });
});
