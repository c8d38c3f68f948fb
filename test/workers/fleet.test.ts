import { env } from "cloudflare:workers";
import { createExecutionContext, createMessageBatch, getQueueResult, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { projectionDue, projectionMessage } from "../../workers/chain/projection.ts";
import { meterCounts } from "../../workers/lib/meter.ts";
import worker from "../../workers/index.ts";
import type { ProjectionMessage } from "../../workers/projection/messages.ts";
import { deliverProjection, enrollHost, hostPolicyOf, ingest, op, openPush, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let workspaceId: string;
let host: TestHost;

beforeAll(async () => {
  ({ token, workspaceId } = await seedWorkspace());
  host = await enrollHost(token);
  const res = await op(token, `/v1/workspaces/${workspaceId}/policy`, {
    method: "PUT",
    json: {
      mode: "enforce",
      tools: [],
      default_tool_decision: "none",
      models: null,
      budgets: [
        { id: "month", scope: "workspace", window: "month", limit_microusd: 1_000_000_000 },
        { id: "box", scope: "host", window: "day", limit_microusd: 1_000_000_000 },
        { id: "each", scope: "run", window: "run", limit_microusd: 1_000_000_000 },
      ],
      retention: { mode: "keep", keep: ["prompt"] },
    },
  });
  expect(res.status).toBe(200);
});

/** What the request path asked of D1: the Worker's own statements and those its objects made while serving it. */
const d1OnRequestPath = (c: Record<string, number>) =>
  ["request", "HostObject", "ChainObject", "WorkspaceObject"].reduce((n, who) => n + (c[`${who}.d1_statements`] ?? 0), 0);

const stub = (chain: string) => env.CHAINS.get(env.CHAINS.idFromName(chain));

describe("the fleet rows are a projection", () => {
  it("a batch of a known live run, with a priced model call under budgets, makes no D1 statement on its way in", async () => {
    const run = new TestRun(host);
    run.start();
    expect((await ingest(host, [run.part()])).status).toBe(200);
    const from = run.frames.length;
    run.tool();
    run.llm();
    meterCounts(true);
    const res = await ingest(host, [run.part(run.frames.slice(from))]);
    expect(res.status).toBe(200);
    const c = meterCounts(true);
    expect(d1OnRequestPath(c)).toBe(0);
    expect(c["request.do.HOSTS.authenticate"]).toBe(1);
    expect(c["request.do.CHAINS.ingest"]).toBe(1);
    // The row came through the queue: the consumer's statements, one per table it wrote.
    expect(c["projection.d1_statements"]).toBeGreaterThan(0);
    const row = (await (await op(token, `/v1/runs/${run.chain}`)).json()) as { frame_count: number; spend_microusd: number };
    expect(row.frame_count).toBe(3);
    expect(row.spend_microusd).toBeGreaterThan(0);
  });

  it("writes a whole consumer batch with one statement per table, whatever its size", async () => {
    const runs = Array.from({ length: 30 }, () => new TestRun(host));
    for (const r of runs) {
      r.start();
      r.llm();
    }
    const messages = await Promise.all(
      runs.map(async (r) => {
        await ingest(host, [r.part()]);
        return runInDurableObject(stub(r.chain), async (obj, state) => projectionMessage(state.storage.sql, obj.summary()!, Date.now()));
      }),
    );
    meterCounts(true);
    const batch = createMessageBatch<ProjectionMessage>(
      "oxagen-projection",
      messages.map((body, i) => ({ id: `m${i}`, timestamp: Date.now(), attempts: 1, body })),
    );
    const ctx = createExecutionContext();
    await worker.queue(batch, env, ctx);
    expect((await getQueueResult(batch, ctx)).outcome).toBe("ok");
    const c = meterCounts(true);
    // runs, spend and its daily rollup (two), agents: five statements for thirty runs, in one D1 round trip.
    expect(c["projection.d1_statements"]).toBe(5);
    expect(c["projection.d1_batches"]).toBe(1);
  });

  it("a consumer killed mid-batch has the whole batch delivered again, and the rows catch up, never going back", async () => {
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    const message = () =>
      runInDurableObject(stub(run.chain), (obj, state) => projectionMessage(state.storage.sql, obj.summary()!, Date.now()));
    const older = await message();
    run.tool();
    run.stop();
    expect((await ingest(host, [run.part(run.frames.slice(1))])).status).toBe(200);
    const newer = await message();
    expect(newer.kind === "chain" && newer.run?.status).toBe("ended");
    // D1 as it was before the newer state's message was written: the run live, at the older version.
    const olderVersion = older.kind === "chain" ? older.version : -1;
    await env.DB.prepare("UPDATE runs SET status = 'live', frame_count = 1, version = ? WHERE id = ?").bind(olderVersion, run.chain).run();
    const status = async () => (await (await op(token, `/v1/runs/${run.chain}`)).json()) as { status: string; frame_count: number };
    const deliver = (batchOf: D1Database["batch"], bodies = [newer, older]) => deliverProjection(bodies, batchOf);
    // Killed before its write committed: nothing written, and the batch is handed back whole to be delivered again.
    const before = await deliver(() => Promise.reject(new Error("consumer killed")));
    expect(before).toBe("redelivered");
    expect(await status()).toMatchObject({ status: "live", frame_count: 1 });
    // Killed after its write committed, before the queue heard: delivered again, and written twice it is the same.
    const after = await deliver(async (s) => {
      await env.DB.batch(s);
      throw new Error("consumer killed after its write");
    });
    expect(after).toBe("redelivered");
    expect(await status()).toMatchObject({ status: "ended", frame_count: 3 });
    expect(await deliver((s) => env.DB.batch(s))).toBe("ok");
    expect(await status()).toMatchObject({ status: "ended", frame_count: 3 });
    // The older state, delivered again on its own after the newer one, puts nothing back.
    expect(await deliver((s) => env.DB.batch(s), [older])).toBe("ok");
    expect(await status()).toMatchObject({ status: "ended", frame_count: 3 });
  });

  it("sends a new chain and a status change at once, and a live run's other changes at most once per window", async () => {
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    const rule = await runInDurableObject(stub(run.chain), (obj, state) => {
      const s = obj.summary()!;
      const sentMs = state.storage.sql.exec<{ sent_ms: number }>("SELECT sent_ms FROM projection").one().sent_ms;
      const due = (x: object) => projectionDue(state.storage.sql, x as never, 5000);
      return {
        sentMs,
        sent: due(s),
        moreFrames: due({ ...s, version: s.version + 1 }),
        ended: due({ ...s, version: s.version + 1, status: "ended" }),
      };
    });
    expect(rule.sent).toBeNull();
    expect(rule.moreFrames).toBe(rule.sentMs + 5000);
    expect(rule.ended).toBe(0);
  });

  it("a policy fetch makes no D1 statement; a workspace-wide change costs the same calls and statements for 2 connected hosts as for 12", async () => {
    const cost = async (hosts: number) => {
      const ws = await seedWorkspace();
      const fleet = await Promise.all(Array.from({ length: hosts }, () => enrollHost(ws.token)));
      const conns = await Promise.all(fleet.map((h) => openPush(h)));
      for (const h of fleet) await hostPolicyOf(h);
      meterCounts(true);
      await hostPolicyOf(fleet[0]!);
      const fetch = meterCounts(true);
      const res = await op(ws.token, `/v1/workspaces/${ws.workspaceId}/policy`, {
        method: "PUT",
        json: {
          mode: "observe",
          tools: [],
          default_tool_decision: "none",
          models: null,
          budgets: [],
          retention: { mode: "keep", keep: [] },
        },
      });
      expect(await res.json()).toMatchObject({ propagation: { hosts, applied: hosts, not_applied: [], more: 0 } });
      const change = meterCounts(true);
      for (const c of conns) c.ws!.close();
      // The operator's request alone: its own statements and calls (the recorders' fetches are counted apart, by their HostObject calls).
      const fetches = change["request.do.HOSTS.authenticate"] ?? 0;
      const perFetchDo = Object.entries(fetch).reduce((n, [k, v]) => (k.startsWith("request.do.") && !k.endsWith(".ms") ? n + v : n), 0);
      const requestDo = Object.entries(change).reduce((n, [k, v]) => (k.startsWith("request.do.") && !k.endsWith(".ms") ? n + v : n), 0);
      return { fetchD1: d1OnRequestPath(fetch), changeD1: d1OnRequestPath(change), operatorDo: requestDo - fetches * perFetchDo };
    };
    const small = await cost(2);
    const large = await cost(12);
    expect(small.fetchD1).toBe(0);
    expect(large.fetchD1).toBe(0);
    expect(large.changeD1).toBe(small.changeD1);
    expect(large.operatorDo).toBe(small.operatorDo);
  });
});
