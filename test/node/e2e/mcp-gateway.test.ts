// End to end through the recorder's gateway: the official MCP clients (1.x SDK, 2.x in both
// protocol revisions) call the workspace's Oxagen tools at http://127.0.0.1:<gateway>/mcp; the
// gateway carries each request, host-signed and naming its run, to the real Worker under
// `wrangler dev`, whose tools call local upstreams. The run's chain gets one tool_call (or, refused,
// one policy_decision) per call, matching the server's meter row; the credential is nowhere.
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runIdFor, TOOL_META, toolInputDigest, toolOutputDigest } from "../../../protocol/index.ts";
import { daemonUp, drained, enroll, eventually, filesText, newComputer, runDaemon, stopAll, type Computer } from "../../support/e2e.ts";
import { startToolUpstreams, type ToolUpstreams } from "../../support/tool-upstreams.ts";
import { startWorker, type LocalWorker } from "../../support/worker.ts";

const SECRET = "sk_live_gateway_never_seen_0123456789abcdef";
const AGENT = "mcp-agent";
const KINDS = ["v1", "v2-legacy", "v2-modern"] as const;

let worker: LocalWorker;
let upstreams: ToolUpstreams;
let computer: Computer;
let hostId: string;
let daemon: ReturnType<typeof runDaemon>;
let hookSecret: string;

const tag = () => `g${Math.random().toString(16).slice(2, 14)}`;
const hits = async (t: string) => (await (await fetch(`${upstreams.http}/hits/${t}`)).json()) as { hits: number; aborted: number };
const gatewayUrl = () => new URL(`http://127.0.0.1:${computer.gatewayPort}/mcp`);

beforeAll(async () => {
  [worker, upstreams] = await Promise.all([startWorker(), startToolUpstreams()]);
  const refund = {
    name: "refund",
    description: "Refunds part of a charge.",
    input_schema: { type: "object", properties: { charge: { type: "string" }, amount: { type: "integer" }, tag: { type: "string" } } },
    binding: { kind: "http", method: "POST", origin: upstreams.http, path: "/v1/charges/{charge}/refunds" },
    credential: SECRET,
    access: [{ id: "cap", decision: "allow", arguments: { amount: { maximum: 5000 } } }],
  };
  const steps = {
    name: "steps",
    binding: { kind: "mcp", url: `${upstreams.mcp}/gw`, tool: "progress" },
    access: [{ id: "all", decision: "allow" }],
  };
  for (const tool of [refund, steps]) {
    const res = await worker.api("/v1/tools", { method: "POST", body: JSON.stringify(tool) });
    if (res.status !== 201) throw new Error(`tool: ${res.status} ${await res.text()}`);
  }
  computer = await newComputer();
  hostId = (await enroll(worker, computer)).hostId;
  hookSecret = (JSON.parse(readFileSync(join(computer.env.OXAGEN_HOME!, "host.json"), "utf8")) as { hook_secret: string }).hook_secret;
  daemon = runDaemon(computer);
  await daemonUp(computer);
  await eventually(async () => {
    const s = JSON.parse(readFileSync(join(computer.env.OXAGEN_HOME!, "recorder-status.json"), "utf8")) as {
      gateway?: { listening: string };
    };
    return s.gateway?.listening === "listening";
  }, "the gateway to listen");
}, 300_000);

afterAll(async () => {
  await stopAll(daemon, worker);
  await upstreams?.close();
});

/** A connected official client of `kind`, through the gateway, with these headers. */
async function client(kind: (typeof KINDS)[number], headers: Record<string, string>) {
  const requestInit = { headers: { "x-oxagen-hook-secret": hookSecret, ...headers } };
  if (kind === "v1") {
    const c = new ClientV1({ name: "gw-v1", version: "1" });
    await c.connect(new TransportV1(gatewayUrl(), { requestInit }));
    return c as unknown as ClientV2;
  }
  const mode = kind === "v2-modern" ? { pin: "2026-07-28" } : ("legacy" as const);
  const c = new ClientV2({ name: "gw-v2", version: "2" }, { versionNegotiation: { mode } });
  await c.connect(new TransportV2(gatewayUrl(), { requestInit }));
  return c;
}

const session = (s: string) => ({ "x-oxagen-agent": AGENT, "x-oxagen-session-id": s });

type Frame = { kind: string; payload: Record<string, unknown> };
async function framesOf(run: string): Promise<Frame[]> {
  const res = await worker.api(`/v1/runs/${run}/frames?limit=1000`);
  if (res.status !== 200) return [];
  const { frames } = (await res.json()) as { frames: { kind: string; payload: string | Record<string, unknown> }[] };
  return frames.map((f) => ({ kind: f.kind, payload: typeof f.payload === "string" ? JSON.parse(f.payload) : f.payload }));
}

type Row = {
  id: string;
  status: string;
  rule: string | null;
  reason_sha256: string | null;
  input_sha256: string;
  output_sha256: string | null;
  run_id: string | null;
  agent: string | null;
};
async function meterRows(query: string): Promise<Row[]> {
  return ((await (await worker.api(`/v1/tool-calls?${query}`)).json()) as { calls: Row[] }).calls;
}

describe("the gateway's MCP side against the real Worker", () => {
  it.each(KINDS)(
    "lists the verified catalog, carries an allowed call, a refusal and an unknown tool, and records each as the meter does (%s)",
    async (kind) => {
      const s = `s-${kind}-${tag()}`;
      const run = runIdFor(hostId, AGENT, s);
      const c = await client(kind, session(s));
      const list = await c.listTools();
      const refund = list.tools.find((t) => t.name === "refund")!;
      // The clause's cap is in the schema the model is shown, and the list came with its signed catalog.
      expect((refund.inputSchema.properties as Record<string, { maximum?: number }>).amount?.maximum).toBe(5000);
      expect((list as { _meta?: Record<string, unknown> })._meta?.[TOOL_META.catalog]).toBeTruthy();

      const t = tag();
      const okArgs = { charge: "ch_1", amount: 100, tag: t };
      const ok = (await c.callTool({ name: "refund", arguments: okArgs })) as { isError?: boolean; content: unknown[] };
      expect(ok.isError).toBeFalsy();
      const refused = (await c.callTool({ name: "refund", arguments: { charge: "ch_1", amount: 9000, tag: t } })) as {
        isError?: boolean;
        content: { text: string }[];
      };
      expect(refused.isError).toBe(true);
      expect(refused.content[0]!.text).toContain("Oxagen refused this call");
      await expect(c.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(/Unknown tool|-32602/);
      // The refused call never reached the payments API.
      expect(await hits(t)).toEqual({ hits: 1, aborted: 0 });
      await c.close();

      await drained(computer);
      const frames = await eventually(async () => {
        const f = await framesOf(run);
        return f.filter((x) => x.payload.path === "gateway").length >= 3 ? f : null;
      }, "the run's gateway frames");
      const rows = await meterRows(`run=${run}`);
      expect(rows.map((r) => r.status).sort()).toEqual(["ok", "refused"]);
      const okRow = rows.find((r) => r.status === "ok")!;
      const refusedRow = rows.find((r) => r.status === "refused")!;

      const calls = frames.filter((f) => f.kind === "tool_call" && f.payload.path === "gateway");
      const decisions = frames.filter((f) => f.kind === "policy_decision" && f.payload.path === "gateway");
      const unknown = calls.find((f) => f.payload.tool_name === "no_such_tool")!;
      const carried = calls.find((f) => f.payload.call_id === okRow.id)!;
      expect(carried.payload).toMatchObject({ tool_name: "refund", server: "oxagen", status: "ok" });
      expect((carried.payload.input as { sha256: string }).sha256).toBe(okRow.input_sha256);
      expect((carried.payload.input as { sha256: string }).sha256).toBe(toolInputDigest(okArgs).sha256);
      expect((carried.payload.output as { sha256: string }).sha256).toBe(okRow.output_sha256);
      expect((carried.payload.output as { sha256: string }).sha256).toBe(toolOutputDigest(ok as Record<string, unknown>).sha256);
      // The refusal: one policy_decision, its reason as the meter's hash only.
      expect(decisions).toHaveLength(1);
      expect(decisions[0]!.payload).toMatchObject({
        subject: "oxagen_tool",
        decision: "deny",
        rule: "cap",
        call_id: refusedRow.id,
        reason_sha256: refusedRow.reason_sha256,
        tool_name: "refund",
      });
      expect(decisions[0]!.payload.reason).toBeUndefined();
      // An unknown tool: a failed call, no meter row.
      expect(unknown.payload).toMatchObject({ status: "error", server: "oxagen" });
      expect(unknown.payload.call_id).toBeUndefined();
      expect(okRow).toMatchObject({ agent: AGENT, run_id: run });
      // The credential is in no frame, no meter row, nothing on this computer.
      expect(JSON.stringify(frames)).not.toContain(SECRET);
      expect(JSON.stringify(rows)).not.toContain(SECRET);
      expect(filesText(computer.env.OXAGEN_HOME!)).not.toContain(SECRET);
    },
  );

  it.each(["v2-legacy", "v2-modern"] as const)("streams a tool's progress through as it comes (%s)", async (kind) => {
    const c = await client(kind, session(`s-steps-${kind}-${tag()}`));
    const seen: number[] = [];
    const result = (await c.callTool(
      { name: "steps", arguments: { steps: 3, tag: tag() } },
      { onprogress: (p: { progress: number }) => seen.push(p.progress) },
    )) as { content: { text: string }[] };
    expect(result.content[0]!.text).toBe("done after 3 steps");
    expect(seen).toEqual([1, 2, 3]);
    await c.close();
  });

  it("refuses a call of a paused run at the server, and records the refusal", async () => {
    const s = `s-pause-${tag()}`;
    const run = runIdFor(hostId, AGENT, s);
    const c = await client("v2-legacy", session(s));
    const t = tag();
    expect(
      ((await c.callTool({ name: "refund", arguments: { charge: "ch_2", amount: 5, tag: t } })) as { isError?: boolean }).isError,
    ).toBeFalsy();
    await drained(computer);
    await eventually(async () => (await worker.api(`/v1/runs/${run}`)).status === 200, "the run on the server");
    const paused = await worker.api(`/v1/runs/${run}/pause`, { method: "POST", body: "{}" });
    expect(paused.status).toBe(200);
    const refused = (await c.callTool({ name: "refund", arguments: { charge: "ch_2", amount: 6, tag: t } })) as {
      isError?: boolean;
      _meta?: Record<string, { rule?: string }>;
    };
    expect(refused.isError).toBe(true);
    expect(refused._meta?.[TOOL_META.decision]?.rule).toBe("paused_run");
    expect(await hits(t)).toEqual({ hits: 1, aborted: 0 });
    await c.close();
    await worker.api(`/v1/runs/${run}/resume`, { method: "POST", body: "{}" });
  });

  it("ties a call that names no session to the PreToolUse it follows, and takes its PostToolUse as the same call", async () => {
    const s = `s-tie-${tag()}`;
    const run = runIdFor(hostId, AGENT, s);
    const args = { charge: "ch_3", amount: 42, tag: tag() };
    const hook = (event: string, extra: Record<string, unknown>) =>
      computer.hook(["--agent", AGENT], { session_id: s, hook_event_name: event, cwd: "/tmp", ...extra });
    hook("SessionStart", {});
    hook("PreToolUse", { tool_name: "mcp__oxagen__refund", tool_input: args, tool_use_id: "tu_tie_1" });
    const c = await client("v1", {});
    const result = await c.callTool({ name: "refund", arguments: args });
    hook("PostToolUse", { tool_name: "mcp__oxagen__refund", tool_input: args, tool_use_id: "tu_tie_1", tool_response: result });
    hook("SessionEnd", { reason: "done" });
    await c.close();
    await drained(computer);
    const frames = await eventually(async () => {
      const f = await framesOf(run);
      return f.some((x) => x.kind === "agent_stop") ? f : null;
    }, "the tied run");
    const calls = frames.filter((f) => f.kind === "tool_call");
    expect(calls).toHaveLength(1);
    expect(calls[0]!.payload).toMatchObject({ path: "gateway", tool_name: "refund", tool_use_id: "tu_tie_1", server: "oxagen" });
    expect(frames.find((f) => f.kind === "tool_requested")?.payload).toMatchObject({
      tool_name: "mcp__oxagen__refund",
      tool_use_id: "tu_tie_1",
    });
    const row = (await meterRows(`run=${run}`))[0]!;
    expect(calls[0]!.payload.call_id).toBe(row.id);
  });

  it("refuses a browser Origin, a call without the enrollment's secret, GET, and a request over 1 MiB, before the server sees them", async () => {
    const post = (headers: Record<string, string>, body = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') =>
      fetch(gatewayUrl(), {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body,
      });
    expect((await post({ "x-oxagen-hook-secret": hookSecret, origin: `http://127.0.0.1:${computer.gatewayPort}` })).status).toBe(403);
    expect((await post({ "x-oxagen-hook-secret": hookSecret, origin: "https://evil.example" })).status).toBe(403);
    expect((await post({})).status).toBe(401);
    expect((await post({ "x-oxagen-hook-secret": "0".repeat(64) })).status).toBe(401);
    expect((await fetch(gatewayUrl(), { headers: { "x-oxagen-hook-secret": hookSecret } })).status).toBe(405);
    const big = JSON.stringify({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "refund", arguments: { tag: "x".repeat(1024 * 1024) } },
    });
    const tooLarge = await post({ "x-oxagen-hook-secret": hookSecret }, big);
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as { error: { code: number } }).error.code).toBe(-32600);
    // A well-formed request with the secret and no Origin passes.
    const listed = await post({ "x-oxagen-hook-secret": hookSecret, "mcp-protocol-version": "2025-11-25" });
    expect(listed.status).toBe(200);
  });
});
