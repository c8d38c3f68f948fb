import { env } from "cloudflare:workers";
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { meterStatements } from "../../workers/lib/meter.ts";
import worker from "../../workers/index.ts";
import { signedIn } from "./console-browser.ts";
import { enrollHost, ingest, op, seedRuns, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;
let run: TestRun;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
  run = new TestRun(host);
  run.start();
  run.llm();
  run.stop();
  await ingest(host, [run.part()]);
  await seedRuns(
    host,
    Array.from({ length: 300 }, (_, i) => 0x9000 + i),
    (i) => ({ lastFrameMs: i * 1000, agent: i % 2 ? "bot" : null }),
  );
});

/** What SQLite plans for each statement the requests made: one line per step, with the statement. */
async function plans(): Promise<{ sql: string; steps: string[] }[]> {
  const out: { sql: string; steps: string[] }[] = [];
  for (const s of meterStatements(true)) {
    if (!/^\s*(select|with)/i.test(s.sql) && !/^\s*(update|delete)/i.test(s.sql)) continue;
    const rows = await env.DB.prepare(`EXPLAIN QUERY PLAN ${s.sql}`)
      .bind(...(s.params as unknown[]))
      .all<{ detail: string }>();
    out.push({ sql: s.sql, steps: rows.results.map((r) => r.detail) });
  }
  return out;
}

// A full scan of a table that grows with the fleet or the month: `SCAN runs`, also through an index read whole.
const FULL_SCAN = /^SCAN (runs|agents|hosts|spend|spend_daily|spend_daily_runs)\b/;

describe("every console and API list query is served by an index", () => {
  it("reads no table that grows with the fleet whole: runs, agents, hosts, spend", async () => {
    meterStatements(true);
    const day = new Date().toISOString().slice(0, 10);
    const api = [
      "/v1/runs",
      "/v1/runs?limit=2",
      `/v1/runs?status=ended&limit=5`,
      `/v1/runs?tier=observe`,
      `/v1/runs?grade=inspect`,
      `/v1/runs?host=${host.id}`,
      "/v1/runs?agent=bot",
      `/v1/runs?from=1000&to=${Date.now()}`,
      `/v1/runs?cursor=100000:run_${"0".repeat(32)}`,
      `/v1/runs?cursor=0:run_${"f".repeat(32)}`,
      `/v1/runs/${run.chain}`,
      `/v1/runs/${run.chain}/coverage`,
      "/v1/hosts",
      `/v1/hosts/${host.id}`,
      `/v1/hosts/${host.id}/agents`,
      "/v1/agents",
      "/v1/agents?limit=1",
      "/v1/spend",
      "/v1/spend?group_by=day",
      "/v1/spend?group_by=model",
      "/v1/spend?group_by=host,agent",
      `/v1/spend?group_by=run&from=${day}&to=${day}`,
      `/v1/spend?host=${host.id}&group_by=month`,
      `/v1/spend?run=${run.chain}&group_by=model`,
      "/v1/spend/budgets",
      "/v1/tools",
      "/v1/tool-calls",
      "/v1/tool-tokens",
      "/v1/tokens",
      "/v1/enrollment-tokens",
    ];
    for (const path of api) expect((await op(token, path)).status, path).toBe(200);
    const b = await signedIn(token);
    for (const path of [
      "/console",
      "/console/runs",
      "/console/runs?status=ended",
      "/console/computers",
      "/console/spend",
      `/console/runs/${run.chain}`,
    ])
      expect((await b.page(path)).res.status, path).toBe(200);
    // The cron's sweeps.
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "*/5 * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    const seen = await plans();
    expect(seen.length).toBeGreaterThan(30);
    const scans = seen.filter((p) => p.steps.some((s) => FULL_SCAN.test(s)));
    expect(scans.map((p) => `${p.sql}\n  ${p.steps.join("\n  ")}`)).toEqual([]);
    // A page in a list's order is read in an index's order: no sort of everything the filter matched.
    const sorted = seen.filter(
      (p) => /\b(runs|hosts|agents)\b/.test(p.sql) && p.steps.some((s) => /TEMP B-TREE FOR (ORDER BY|RIGHT PART)/.test(s)),
    );
    expect(sorted.map((p) => `${p.sql}\n  ${p.steps.join("\n  ")}`)).toEqual([]);
  });

  it("the Spend page reads the daily rollup by its key over the period, never the runs' spend rows", async () => {
    const b = await signedIn(token);
    meterStatements(true);
    expect((await b.page("/console/spend")).res.status).toBe(200);
    const seen = (await plans()).filter((p) => /\bspend/.test(p.sql));
    // By day, agent, computer and model; the runs by day, agent and computer.
    expect(seen.length).toBe(4 + 3);
    for (const p of seen) {
      const steps = p.steps.join("\n  ");
      expect(steps, p.sql).not.toMatch(/\b(SCAN|SEARCH) spend\b/);
      expect(steps, p.sql).toMatch(/^SEARCH (spend_daily(_runs)?) USING INDEX sqlite_autoindex_\1_1 \(workspace_id=\? AND day>\?\)/m);
    }
  });
});
