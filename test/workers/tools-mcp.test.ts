import { describe, expect, it } from "vitest";
import {
  openToolCatalog,
  publicKeyOf,
  sha256Hex,
  TOOL_META,
  type ToolCallMeta,
  type ToolDecisionMeta,
  toolInputDigest,
  toolOutputDigest,
} from "../../protocol/index.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";
import { enrollHost, ingest, op, seedWorkspace, TestRun } from "./support.ts";
import {
  CLIENTS,
  connect,
  defineTool,
  hitsOf,
  meterRows,
  newTag,
  refundsTool,
  SECRET,
  setBudgets,
  type TestCaller,
  textOf,
  toolToken,
} from "./tools-support.ts";

type Result = { content: unknown[]; isError?: boolean; _meta?: Record<string, unknown> };
const callMeta = (r: Result) => r._meta?.[TOOL_META.call] as ToolCallMeta;
const decisionOf = (r: Result) => r._meta?.[TOOL_META.decision] as ToolDecisionMeta | undefined;

async function workspaceWithRefunds() {
  const { token, workspaceId } = await seedWorkspace();
  const host = await enrollHost(token);
  await defineTool(token, refundsTool());
  return { token, workspaceId, host };
}

describe.each(CLIENTS)("the hosted MCP endpoint with the %s client", (kind) => {
  it("lists each caller only the tools it may use, the schema narrowed by its clause, in a catalog signed with the server's key", async () => {
    const { token, workspaceId, host } = await workspaceWithRefunds();
    const callers: [TestCaller, boolean][] = [
      [{ kind: "gateway", host, agent: "claude-code" }, true],
      [{ kind: "gateway", host, agent: "codex" }, false],
      [{ kind: "gateway", host }, false],
      [{ kind: "direct", token: await toolToken(token, "refunds-bot") }, true],
      [{ kind: "direct", token: await toolToken(token, "other-bot") }, false],
    ];
    for (const [caller, sees] of callers) {
      const client = await connect(kind, workspaceId, caller);
      const list = (await client.listTools()) as unknown as { tools: Record<string, unknown>[]; _meta?: unknown };
      expect(list.tools.map((t) => t.name)).toEqual(sees ? ["refund"] : []);
      const catalog = openToolCatalog(list, publicKeyOf(SERVER_SECRET));
      expect(catalog.workspace).toBe(workspaceId);
      expect(catalog.caller).toEqual(
        caller.kind === "gateway"
          ? { kind: "gateway", host: host.id, agent: caller.agent ?? null, run: null }
          : { kind: "direct", host: null, agent: sees ? "refunds-bot" : "other-bot", run: null },
      );
      if (sees) {
        const schema = list.tools[0]!.inputSchema as { properties: Record<string, Record<string, unknown>> };
        expect(schema.properties.amount).toEqual({ type: "integer", minimum: 1, maximum: 5000 });
        // A tool changed on the way no longer matches its signed definition.
        (list.tools[0] as { description: string }).description = "Refunds everything.";
        expect(() => openToolCatalog(list, publicKeyOf(SERVER_SECRET))).toThrow(/differs from its signed definition/);
      }
      await client.close();
    }
  });

  it("forwards an allowed call with the credential injected, and meters it with the digests of what the client sent and got", async () => {
    const { token, workspaceId, host } = await workspaceWithRefunds();
    const tag = newTag();
    const client = await connect(kind, workspaceId, { kind: "gateway", host, agent: "claude-code" });
    const args = { charge: "ch_1", amount: 4200, tag };
    const result = (await client.callTool({ name: "refund", arguments: args })) as Result;
    expect(result.isError).toBeFalsy();
    const echoed = JSON.parse(textOf(result)) as { path: string; body: unknown; auth: string };
    expect(echoed.path).toBe("/v1/charges/ch_1/refunds");
    expect(echoed.body).toEqual({ amount: 4200, tag });
    // The upstream got the credential; what came back holds it no more.
    expect(echoed.auth).toBe("[credential removed by Oxagen]");
    expect(JSON.stringify(result)).not.toContain(SECRET);
    expect(await hitsOf(tag)).toEqual({ hits: 1, aborted: 0 });
    const [row] = await meterRows(token, "tool=refund");
    const meta = callMeta(result);
    expect(row).toMatchObject({
      id: meta.call_id,
      def_sha256: meta.definition_sha256,
      caller: "gateway",
      host_id: host.id,
      agent: "claude-code",
      status: "ok",
      upstream_status: 200,
      scrubbed: 1,
      input_sha256: toolInputDigest(args).sha256,
      input_size: toolInputDigest(args).size,
      output_sha256: toolOutputDigest(result).sha256,
      output_size: toolOutputDigest(result).size,
    });
  });

  it("refuses arguments outside the clause's narrowing with isError and the decision, before the upstream sees them", async () => {
    const { token, workspaceId, host } = await workspaceWithRefunds();
    const tag = newTag();
    const client = await connect(kind, workspaceId, { kind: "gateway", host, agent: "claude-code" });
    const result = (await client.callTool({ name: "refund", arguments: { charge: "ch_1", amount: 5001, tag } })) as Result;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      "Oxagen refused this call (cap): refused by the workspace's access clause cap: amount must be at most 5000.",
    );
    const decision = decisionOf(result)!;
    expect(decision).toMatchObject({ outcome: "deny", rule: "cap", call_id: callMeta(result).call_id });
    const wrongType = (await client.callTool({ name: "refund", arguments: { charge: "ch_1", amount: "lots", tag } })) as Result;
    expect(decisionOf(wrongType)?.rule).toBe("input_schema");
    expect(await hitsOf(tag)).toEqual({ hits: 0, aborted: 0 });
    const rows = await meterRows(token, "status=refused");
    expect(rows.map((r) => r.rule)).toEqual(["input_schema", "cap"]);
    expect(rows[1]).toMatchObject({ id: decision.call_id, reason_sha256: decision.reason_sha256, cost_microusd: 0 });
    expect(sha256Hex(rows[1]!.reason as string)).toBe(decision.reason_sha256);
  });

  it("answers a call of an unknown tool, or one hidden from the caller, with the protocol's invalid-params error", async () => {
    const { workspaceId, host } = await workspaceWithRefunds();
    for (const [agent, name] of [
      ["claude-code", "no_such_tool"],
      ["codex", "refund"],
    ] as const) {
      const client = await connect(kind, workspaceId, { kind: "gateway", host, agent });
      const err = await client.callTool({ name, arguments: {} }).then(
        () => null,
        (e: unknown) => e as { code?: number; message: string },
      );
      expect(err?.code).toBe(-32602);
      expect(err?.message).toContain(`Unknown tool: ${name}`);
    }
  });

  it("refuses calls as model calls are refused: a paused agent, a paused run, a suspended computer, an exhausted budget", async () => {
    const { token, workspaceId, host } = await workspaceWithRefunds();
    const tag = newTag();
    const call = async (caller: TestCaller) => {
      const client = await connect(kind, workspaceId, caller);
      const r = (await client.callTool({ name: "refund", arguments: { charge: "ch_1", amount: 10, tag } })) as Result;
      await client.close();
      return r;
    };
    const gateway: TestCaller = { kind: "gateway", host, agent: "claude-code" };
    expect((await op(token, "/v1/agents/claude-code/pause", { json: {} })).status).toBe(200);
    expect(decisionOf(await call(gateway))?.rule).toBe("paused_agent");
    expect((await op(token, "/v1/agents/claude-code/resume", { json: {} })).status).toBe(200);

    const run = new TestRun(host);
    run.start();
    expect((await ingest(host, [run.part()])).status).toBe(200);
    expect((await op(token, `/v1/runs/${run.chain}/pause`, { method: "POST" })).status).toBe(200);
    expect(decisionOf(await call({ ...gateway, run: run.chain }))?.rule).toBe("paused_run");
    expect(decisionOf(await call(gateway))).toBeUndefined();

    expect((await op(token, `/v1/hosts/${host.id}/suspend`, { method: "POST" })).status).toBe(200);
    expect(decisionOf(await call(gateway))?.rule).toBe("suspended_host");
    expect((await op(token, `/v1/hosts/${host.id}/resume`, { method: "POST" })).status).toBe(200);

    await setBudgets(token, workspaceId, [{ id: "none-left", scope: "workspace", window: "month", limit_microusd: 0 }]);
    const refused = await call(gateway);
    expect(decisionOf(refused)?.rule).toBe("budget");
    expect(textOf(refused)).toContain("budget exhausted: none-left");
    expect(decisionOf(await call({ kind: "direct", token: await toolToken(token, "refunds-bot") }))?.rule).toBe("budget");
    // Only the call between the pauses reached the upstream.
    expect((await hitsOf(tag)).hits).toBe(1);
  });
});
