import { describe, expect, it } from "vitest";
import { TOOL_META, type ToolDecisionMeta } from "../../protocol/index.ts";
import { budgetUseOf } from "../../workers/lib/budget-use.ts";
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { CALL_COUNT_STEPS, callsCounted } from "../../workers/workspace/call-counts.ts";
import { reserveCall, settleCall } from "../../workers/workspace/tool-meter.ts";
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

  it("reserves a call's cost in the running totals before it is forwarded, spends it after, gives it back when never forwarded, spends a lost one", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    await setBudgets(token, workspaceId, [{ id: "host-day", scope: "host", window: "day", limit_microusd: 10_000 }]);
    const meter = env.WORKSPACES.get(env.WORKSPACES.idFromName(workspaceId));
    // Noon UTC today: the lost call's four minutes later are the same day.
    const now = Math.floor(Date.now() / 86_400_000) * 86_400_000 + 12 * 3_600_000;
    const call = (id: string) => ({
      id,
      tool: "refund",
      defSha256: "d".repeat(64),
      caller: "gateway" as const,
      hostId: host.id,
      agent: "claude-code",
      runId: `run_${"b".repeat(32)}`,
      tokenId: null,
      inputSha256: "e".repeat(64),
      inputSize: 2,
    });
    const use = async () => {
      const [c] = (await budgetUseOf(env, workspaceId, { onlyHost: host.id }, now)).clauses;
      return [c?.uses[0]?.spent_microusd, c?.uses[0]?.reserved_microusd];
    };
    const end = { status: "ok" as const, durationMs: 1, outputSha256: null, outputSize: null, upstreamStatus: 200, scrubbed: false };
    expect(await meter.reserveToolCall(call("tc_1"), { costMicrousd: 3_000, limits: [] }, now)).toMatchObject({ granted: true });
    expect(await use()).toEqual([3_000, 3_000]);
    await meter.settleToolCall({ ...end, id: "tc_1", forwarded: true }, now);
    expect(await use()).toEqual([3_000, 0]);
    await meter.reserveToolCall(call("tc_2"), { costMicrousd: 4_000, limits: [] }, now);
    await meter.settleToolCall({ ...end, id: "tc_2", status: "error", forwarded: false }, now);
    expect(await use()).toEqual([3_000, 0]);
    // Settled twice: nothing moves again.
    await meter.settleToolCall({ ...end, id: "tc_1", forwarded: true }, now);
    expect(await use()).toEqual([3_000, 0]);
    // Never settled: lost after three minutes, and its cost stays spent (fail closed); the next call finds the room left.
    await meter.reserveToolCall(call("tc_3"), { costMicrousd: 5_000, limits: [] }, now);
    const late = await meter.reserveToolCall(call("tc_4"), { costMicrousd: 2_500, limits: [] }, now + 4 * 60_000);
    expect(late).toMatchObject({ granted: false, rule: "budget" });
    expect(await use()).toEqual([8_000, 0]);
  });

  it("counts calls against a limit from running counters: an admission reads as many rows at 2,000 calls in the window as at 0", async () => {
    const { workspaceId } = await seedWorkspace();
    // Mid-hour (UTC): every call below is in the same hour.
    const now = Math.floor(Date.now() / 3_600_000) * 3_600_000 + 30 * 60_000;
    const call = (id: string, tool = "refund", agent = "claude-code") => ({
      id,
      tool,
      defSha256: "d".repeat(64),
      caller: "gateway" as const,
      hostId: "h1",
      agent,
      runId: `run_${"c".repeat(32)}`,
      tokenId: null,
      inputSha256: "e".repeat(64),
      inputSize: 2,
    });
    const end = { status: "ok" as const, durationMs: 1, outputSha256: null, outputSize: null, upstreamStatus: 200, scrubbed: false };
    const limits = [
      { id: "hourly", scope: "agent" as const, window: "hour" as const, max_calls: 1_000_000 },
      { id: "per-run", scope: "run" as const, window: "run" as const, max_calls: 1_000_000 },
    ];
    const stub = env.WORKSPACES.get(env.WORKSPACES.idFromName(workspaceId));
    await stub.reserveToolCall(call("tc_warm"), { costMicrousd: 0, limits: [] }, now);
    const result = await runInDurableObject(stub, (_obj, state) => {
      const sql = state.storage.sql;
      // The rows one admission reads (every statement's cursor), and its statements.
      const admit = (id: string) => {
        const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
        const counting = {
          exec: (q: string, ...p: SqlStorageValue[]) => {
            const c = sql.exec(q, ...p);
            cursors.push(c);
            return c;
          },
        } as unknown as SqlStorage;
        const { answer } = reserveCall(counting, call(id), { costMicrousd: 0, limits }, [], now);
        settleCall(sql, { ...end, id, forwarded: true }, now);
        return { granted: answer.granted, read: cursors.reduce((n, c) => n + c.rowsRead, 0), statements: cursors.length };
      };
      const first = admit("tc_first");
      for (let i = 0; i < 2_000; i++) {
        reserveCall(sql, call(`tc_${i}`), { costMicrousd: 0, limits: [] }, [], now);
        settleCall(sql, { ...end, id: `tc_${i}`, forwarded: true }, now);
      }
      return { first, later: admit("tc_later") };
    });
    expect(result.first.granted && result.later.granted).toBe(true);
    expect(result.later).toEqual(result.first);
    // The limit still refuses past it, counting the calls the window holds, a call never forwarded given back.
    const three = [{ id: "three-an-hour", scope: "agent" as const, window: "hour" as const, max_calls: 3 }];
    const reserve = (id: string) => stub.reserveToolCall(call(id, "lookup"), { costMicrousd: 0, limits: three }, now);
    for (const id of ["l1", "l2", "l3"]) expect(await reserve(id)).toMatchObject({ granted: true });
    await stub.settleToolCall({ ...end, id: "l3", status: "error", forwarded: false }, now);
    expect(await reserve("l4")).toMatchObject({ granted: true });
    expect(await reserve("l5")).toMatchObject({
      granted: false,
      rule: "three-an-hour",
      reason: "call limit reached: three-an-hour allows 3 calls of lookup for this agent this hour (UTC), and 3 were made",
    });
    // The next hour starts from 0; another agent has its own count.
    expect(await stub.reserveToolCall(call("l6", "lookup"), { costMicrousd: 0, limits: three }, now + 3_600_000)).toMatchObject({
      granted: true,
    });
    expect(await stub.reserveToolCall(call("l7", "lookup", "codex"), { costMicrousd: 0, limits: three }, now)).toMatchObject({
      granted: true,
    });
  });

  it("fills the call counts, once, from the meter rows an object held counted before them", async () => {
    const { workspaceId } = await seedWorkspace();
    const stub = env.WORKSPACES.get(env.WORKSPACES.idFromName(workspaceId));
    const now = Math.floor(Date.now() / 3_600_000) * 3_600_000 + 30 * 60_000;
    const counts = await runInDurableObject(stub, (_obj, state) => {
      const sql = state.storage.sql;
      // Rows as the meter wrote them before the counts: counted, not counted (refused, never forwarded), an hour earlier, no host.
      const rows: [string, number, string | null, number][] = [
        ["a", now, "h1", 1],
        ["b", now - 60_000, "h1", 1],
        ["c", now, "h1", 0],
        ["d", now - 3_600_000, "h1", 1],
        ["e", now, null, 1],
      ];
      for (const [id, ts, host, counted] of rows)
        sql.exec(
          `INSERT INTO tool_calls (id, ts_ms, day, tool, def_sha256, caller, host_id, agent, run_id, status, input_sha256, input_size, counted)
           VALUES (?, ?, ?, 'lookup', 'd', 'gateway', ?, 'claude-code', 'run_1', 'ok', 'e', 2, ?)`,
          id,
          ts,
          new Date(ts).toISOString().slice(0, 10),
          host,
          counted,
        );
      for (const q of CALL_COUNT_STEPS) sql.exec(q);
      const c = (hostId: string | null) => ({ tool: "lookup", hostId, agent: "claude-code", runId: "run_1" });
      const n = (scope: "workspace" | "host" | "agent" | "run", window: "hour" | "day" | "run", hostId: string | null = "h1") =>
        callsCounted(sql, c(hostId), { id: "x", scope, window, max_calls: 1 }, now);
      return [n("host", "hour"), n("agent", "hour"), n("run", "run"), n("host", "hour", null), n("workspace", "hour")];
    });
    expect(counts).toEqual([2, 3, 4, 1, 3]);
  });
});
