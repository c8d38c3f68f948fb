import { describe, expect, it } from "vitest";
import { TOOL_META, type ToolDecisionMeta } from "../../protocol/index.ts";
import { budgetUseOf } from "../../workers/lib/budget-use.ts";
import { env } from "cloudflare:workers";
import { enrollHost, hostCall, seedWorkspace } from "./support.ts";
import { connect, defineTool, hitsOf, meterRows, newTag, refundsTool, setBudgets, toolToken } from "./tools-support.ts";

type Result = { isError?: boolean; _meta?: Record<string, unknown> };
const ruleOf = (r: Result) => (r._meta?.[TOOL_META.decision] as ToolDecisionMeta | undefined)?.rule ?? null;

const N = 12;

describe("tool budgets", () => {
  it(`admits exactly what fits of ${N} concurrent calls: a cost per call against the workspace's budget`, async () => {
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    await defineTool(token, refundsTool({ cost_microusd: 1_000 }));
    await setBudgets(token, workspaceId, [{ id: "tools-day", scope: "workspace", window: "day", limit_microusd: 5_000 }]);
    const tag = newTag();
    const results = await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const caller =
          i % 2 === 0
            ? { kind: "gateway" as const, host, agent: "claude-code" }
            : { kind: "direct" as const, token: await toolToken(token, "refunds-bot") };
        const client = await connect(i % 3 === 0 ? "v1" : "v2-legacy", workspaceId, caller);
        return (await client.callTool({ name: "refund", arguments: { charge: `ch_${i}`, amount: 10, tag } })) as Result;
      }),
    );
    const rules = results.map(ruleOf);
    expect(rules.filter((r) => r === null)).toHaveLength(5);
    expect(rules.filter((r) => r === "budget")).toHaveLength(N - 5);
    expect((await hitsOf(tag)).hits).toBe(5);
    const [use] = (await budgetUseOf(env, workspaceId, {})).clauses;
    expect(use?.uses[0]?.spent_microusd).toBe(5_000);
    const rows = await meterRows(token);
    expect(rows.filter((r) => r.status === "ok").map((r) => r.cost_microusd)).toEqual([1000, 1000, 1000, 1000, 1000]);
    expect(rows.filter((r) => r.status === "refused").every((r) => r.cost_microusd === 0)).toBe(true);
  });

  it(`admits exactly max_calls of ${N} concurrent calls under a call-count limit, per agent`, async () => {
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    await defineTool(token, refundsTool({ limits: [{ id: "three-a-day", scope: "agent", window: "day", max_calls: 3 }] }));
    const tag = newTag();
    const results = await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const client = await connect("v2-modern", workspaceId, { kind: "gateway", host, agent: "claude-code" });
        return (await client.callTool({ name: "refund", arguments: { charge: `ch_${i}`, amount: 10, tag } })) as Result;
      }),
    );
    expect(results.filter((r) => ruleOf(r) === null)).toHaveLength(3);
    expect(results.filter((r) => ruleOf(r) === "three-a-day")).toHaveLength(N - 3);
    expect((await hitsOf(tag)).hits).toBe(3);
    // Another agent has its own count.
    const other = await connect("v2-legacy", workspaceId, { kind: "direct", token: await toolToken(token, "refunds-bot") });
    expect(ruleOf((await other.callTool({ name: "refund", arguments: { charge: "ch_x", amount: 10, tag } })) as Result)).toBeNull();
  });

  it("counts tool charges in the same budget as model spend: a model lease and a tool call never both take the last of it", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    await defineTool(token, refundsTool({ cost_microusd: 3_000 }));
    await setBudgets(token, workspaceId, [{ id: "ws-month", scope: "workspace", window: "month", limit_microusd: 5_000 }]);
    const run = `run_${"a".repeat(32)}`;
    const lease = await hostCall(host, "POST", "/v1/host/budget/leases", JSON.stringify({ run, microusd: 3_000 }));
    expect(lease.status).toBe(201);
    const client = await connect("v2-legacy", workspaceId, { kind: "gateway", host, agent: "claude-code" });
    const r = (await client.callTool({ name: "refund", arguments: { charge: "ch_1", amount: 10, tag: newTag() } })) as Result;
    expect(ruleOf(r)).toBe("budget");
  });
});
