import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { archiveRuns } from "../../workers/archive.ts";
import type { schema } from "../../workers/db/client.ts";
import { usd } from "../../workers/console/layout.tsx";
import { meterStatements } from "../../workers/lib/meter.ts";
import type { ProjectionMessage } from "../../workers/projection/messages.ts";
import { signedIn } from "./console-browser.ts";
import { deliverProjection, enrollHost, op, projectSpend, seedRuns, seedWorkspace, type TestHost } from "./support.ts";

type SpendRow = typeof schema.spend.$inferInsert;
const DAY = 86_400_000;
const dayAgo = (n: number) => new Date(Date.now() - n * DAY).toISOString().slice(0, 10);
const runId = (n: number) => `run_${n.toString(16).padStart(32, "0")}`;

function spendRow(h: TestHost, run: number, agent: string | null, day: string, model: string, microusd: number, calls = 1): SpendRow {
  return {
    runId: runId(run),
    day,
    vendor: "anthropic",
    model,
    priceVersion: "genai-prices@0.1.8",
    workspaceId: h.workspaceId,
    hostId: h.id,
    agent,
    calls,
    unpricedCalls: 0,
    microusd,
    inputTokens: 10 * calls,
    outputTokens: calls,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    version: 0,
  };
}

/** The Spend page's breakdowns computed from the spend rows themselves (the truth the rollup must equal). */
async function fromRows(workspaceId: string, from: string, group: string) {
  const rows = await env.DB.prepare(
    `SELECT ${group} AS key, count(DISTINCT run_id) AS runs, sum(microusd) AS microusd FROM spend
     WHERE workspace_id = ? AND day >= ? GROUP BY key ORDER BY key`,
  )
    .bind(workspaceId, from)
    .all<{ key: string; runs: number; microusd: number }>();
  return rows.results;
}

/** The rollup's cells and run counts, and the same computed from the spend rows: equal whenever the rollup is exact. */
async function rollupAndRows(workspaceId: string) {
  const sums =
    "sum(calls), sum(unpriced_calls), sum(microusd), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens)";
  const q = async (sql: string) => (await env.DB.prepare(sql).bind(workspaceId).raw()).map((r) => JSON.stringify(r));
  return {
    cells: await q(`SELECT day, host_id, agent, vendor, model, price_version, ${sums} FROM spend_daily WHERE workspace_id = ?
      GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(calls) <> 0 ORDER BY 1, 2, 3, 4, 5, 6`),
    cellsFromRows:
      await q(`SELECT day, host_id, coalesce(agent, ''), vendor, model, price_version, ${sums} FROM spend WHERE workspace_id = ?
      GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6`),
    runs: await q(`SELECT day, host_id, agent, runs, runs_last FROM spend_daily_runs WHERE workspace_id = ? AND (runs <> 0 OR runs_last <> 0)
      ORDER BY 1, 2, 3`),
    runsFromRows: await q(`SELECT day, host_id, agent, count(*), sum(last) FROM (
        SELECT day, host_id, coalesce(agent, '') AS agent, day = max(day) OVER (PARTITION BY run_id) AS last
        FROM spend WHERE workspace_id = ? GROUP BY run_id, day)
      GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`),
  };
}

async function expectExact(workspaceId: string) {
  const r = await rollupAndRows(workspaceId);
  expect(r.cells.length).toBeGreaterThan(0);
  expect(r.cells).toEqual(r.cellsFromRows);
  expect(r.runs).toEqual(r.runsFromRows);
}

const message = (chain: string, version: number, spend: SpendRow[]): ProjectionMessage => ({
  kind: "chain",
  chain,
  version,
  run: null,
  agent: null,
  spend: spend.map((s) => ({ ...s, runId: chain, version })),
});

describe("the daily spend rollup", () => {
  it("the Spend page's figures equal the spend rows summed, over several runs, agents, computers and days, read from the rollup only", async () => {
    const ws = await seedWorkspace();
    const [a, b] = [await enrollHost(ws.token), await enrollHost(ws.token)];
    const first = [
      spendRow(a, 1, "alpha", dayAgo(1), "claude-sonnet-4-5", 1_000_000),
      spendRow(a, 1, "alpha", dayAgo(0), "claude-sonnet-4-5", 200_000),
      spendRow(a, 1, "alpha", dayAgo(0), "claude-opus-4-1", 50_000, 2),
      spendRow(a, 2, "beta", dayAgo(5), "claude-sonnet-4-5", 70_000),
      spendRow(b, 3, "alpha", dayAgo(2), "claude-sonnet-4-5", 30_000, 3),
      spendRow(b, 4, "beta", dayAgo(0), "claude-opus-4-1", 9_000),
      spendRow(b, 5, null, dayAgo(1), "claude-sonnet-4-5", 4_000),
      // Outside the page's 30 days.
      spendRow(b, 6, "beta", dayAgo(40), "claude-sonnet-4-5", 8_000_000),
      spendRow(b, 6, "beta", dayAgo(29), "claude-sonnet-4-5", 1_000),
    ];
    await projectSpend(first, 1);
    // Later states of some runs: their totals grew, a new day and model came.
    await projectSpend(
      [
        spendRow(a, 1, "alpha", dayAgo(0), "claude-sonnet-4-5", 260_000, 3),
        spendRow(a, 1, "alpha", dayAgo(0), "claude-haiku-4-5", 5_000),
        spendRow(b, 3, "alpha", dayAgo(1), "claude-sonnet-4-5", 11_000),
      ],
      2,
    );
    await expectExact(ws.workspaceId);
    meterStatements(true);
    const { res, html } = await (await signedIn(ws.token)).page("/console/spend");
    expect(res.status).toBe(200);
    // The page read the rollup's day rows, never the runs' spend rows.
    const statements = meterStatements(true).map((s) => s.sql);
    expect(statements.some((s) => /\bspend_daily\b/.test(s))).toBe(true);
    expect(statements.filter((s) => /\bfrom "?spend"?(\s|$)/i.test(s))).toEqual([]);
    const shown = (key: string) =>
      new RegExp(`<th scope="row" class="mono">${key}</th><td>(\\d+)</td><td>([^<]+)</td>`).exec(html)?.slice(1);
    const from = dayAgo(29);
    const groups = { day: "day", agent: "agent", host: "host_id" };
    let checked = 0;
    for (const [name, column] of Object.entries(groups)) {
      const truth = await fromRows(ws.workspaceId, from, column);
      for (const t of truth) {
        if (t.key === null) continue;
        expect(shown(t.key), `${name} ${t.key}`).toEqual([String(t.runs), usd(t.microusd)]);
        checked++;
      }
      // The API answers the same figures.
      const api = (await (await op(ws.token, `/v1/spend?group_by=${name}&from=${from}`)).json()) as { rows: Record<string, unknown>[] };
      expect(
        api.rows.map((r) => [r[name], r.runs, r.microusd]).sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
        name,
      ).toEqual(truth.map((t) => [t.key, t.runs, t.microusd]).sort((x, y) => String(x[0]).localeCompare(String(y[0]))));
    }
    expect(checked).toBe(5 + 2 + 2);
    const total = (await fromRows(ws.workspaceId, from, "''"))[0]!;
    expect(html).toContain(`${usd(total.microusd)} over the last 30 days`);
    const all = (await (await op(ws.token, `/v1/spend?from=${from}`)).json()) as { rows: Record<string, unknown>[] };
    expect(all.rows).toEqual([expect.objectContaining({ runs: total.runs, microusd: total.microusd })]);
  });

  it("stays exact when a message is delivered again, or an older one after a newer one", async () => {
    const ws = await seedWorkspace();
    const h = await enrollHost(ws.token);
    const chain = runId(0x7001);
    const [d1, d2] = [dayAgo(1), dayAgo(0)];
    const m1 = message(chain, 1, [spendRow(h, 0, "alpha", d1, "m-a", 100)]);
    const m2 = message(chain, 2, [
      spendRow(h, 0, "alpha", d1, "m-a", 150, 2),
      spendRow(h, 0, "alpha", d1, "m-b", 20),
      spendRow(h, 0, "alpha", d2, "m-a", 30),
    ]);
    // A real chain's later message holds only the days since its last send.
    const m3 = message(chain, 3, [spendRow(h, 0, "alpha", d2, "m-a", 60, 2)]);
    const cell = async () =>
      (
        await env.DB.prepare(
          "SELECT day, model, microusd, calls FROM spend_daily WHERE workspace_id = ? AND calls <> 0 ORDER BY day, model",
        )
          .bind(ws.workspaceId)
          .raw()
      ).map((r) => r.join(" "));
    const want = [`${d1} m-a 150 2`, `${d1} m-b 20 1`, `${d2} m-a 60 2`];
    expect(await deliverProjection([m2])).toBe("ok");
    expect(await deliverProjection([m1])).toBe("ok");
    await expectExact(ws.workspaceId);
    expect(await deliverProjection([m3])).toBe("ok");
    expect(await cell()).toEqual(want);
    // All three again, in one batch and out of order, then the newest once more.
    expect(await deliverProjection([m3, m1, m2, m1])).toBe("ok");
    expect(await deliverProjection([m3])).toBe("ok");
    expect(await cell()).toEqual(want);
    await expectExact(ws.workspaceId);
    // Another run's newer day first, its older day after: the run counts once, on its latest day.
    const other = runId(0x7002);
    expect(await deliverProjection([message(other, 5, [spendRow(h, 0, "alpha", d2, "m-a", 7)])])).toBe("ok");
    expect(await deliverProjection([message(other, 4, [spendRow(h, 0, "alpha", d1, "m-a", 3)])])).toBe("ok");
    await expectExact(ws.workspaceId);
    const runs = await env.DB.prepare("SELECT day, runs, runs_last FROM spend_daily_runs WHERE workspace_id = ? ORDER BY day")
      .bind(ws.workspaceId)
      .raw();
    expect(runs).toEqual([
      [d1, 2, 0],
      [d2, 2, 2],
    ]);
  });

  it("a consumer killed mid-batch leaves the rollup exact once the batch is delivered again", async () => {
    const ws = await seedWorkspace();
    const h = await enrollHost(ws.token);
    const chains = [runId(0x7101), runId(0x7102)];
    const day = dayAgo(0);
    const older = chains.map((c) => message(c, 1, [spendRow(h, 0, "alpha", day, "m-a", 10)]));
    await deliverProjection(older);
    const newer = chains.map((c, i) =>
      message(c, 2, [spendRow(h, 0, "alpha", day, "m-a", 40 + i), spendRow(h, 0, "alpha", day, "m-b", 5)]),
    );
    // Killed before its transaction committed: nothing written, the batch handed back whole.
    expect(await deliverProjection(newer, () => Promise.reject(new Error("consumer killed")))).toBe("redelivered");
    await expectExact(ws.workspaceId);
    // Killed after the commit, before the queue heard: delivered again, it adds nothing.
    expect(
      await deliverProjection(newer, async (s) => {
        await env.DB.batch(s);
        throw new Error("consumer killed after its write");
      }),
    ).toBe("redelivered");
    expect(await deliverProjection(newer)).toBe("ok");
    await expectExact(ws.workspaceId);
    const total = await env.DB.prepare("SELECT sum(microusd) AS m FROM spend_daily WHERE workspace_id = ?")
      .bind(ws.workspaceId)
      .first<{ m: number }>();
    expect(total?.m).toBe(40 + 41 + 5 + 5);
  });

  it("holds the spend recorded before the rollup existed, once its migration's backfill ran", async () => {
    const ws = await seedWorkspace();
    const [a, b] = [await enrollHost(ws.token), await enrollHost(ws.token)];
    // Rows as the consumer wrote them before the rollup: straight into spend.
    const rows = [
      spendRow(a, 0x7201, "alpha", dayAgo(3), "m-a", 100, 2),
      spendRow(a, 0x7201, "alpha", dayAgo(2), "m-a", 10),
      spendRow(a, 0x7201, "alpha", dayAgo(2), "m-b", 1),
      spendRow(b, 0x7202, null, dayAgo(2), "m-a", 1000),
    ];
    await env.DB.batch(
      rows.map((r) =>
        env.DB.prepare(
          `INSERT INTO spend (run_id, day, vendor, model, price_version, workspace_id, host_id, agent, calls, unpriced_calls, microusd,
            input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
        ).bind(
          r.runId,
          r.day,
          r.vendor,
          r.model,
          r.priceVersion,
          r.workspaceId,
          r.hostId,
          r.agent,
          r.calls,
          r.unpricedCalls,
          r.microusd,
          r.inputTokens,
          r.outputTokens,
          r.cacheReadTokens,
          r.cacheWriteTokens,
        ),
      ),
    );
    const backfill = env.TEST_MIGRATIONS.find((m) => m.name.includes("spend_rollup_backfill"))!;
    await env.DB.batch([
      env.DB.prepare("DELETE FROM spend_daily"),
      env.DB.prepare("DELETE FROM spend_daily_runs"),
      ...backfill.queries.map((q) => env.DB.prepare(q)),
    ]);
    await expectExact(ws.workspaceId);
    const page = await (await signedIn(ws.token)).page("/console/spend");
    expect(page.html).toContain(`${usd(1111)} over the last 30 days`);
  });

  it("stays the spend rows summed when the archive moves ended runs' rows to R2", async () => {
    const ws = await seedWorkspace();
    const h = await enrollHost(ws.token);
    await seedRuns(h, [0x7301, 0x7302, 0x7303], (i) => ({ archiveAfterMs: i === 0x7303 ? null : Date.now() - 1000, status: "ended" }));
    await projectSpend([
      spendRow(h, 0x7301, "claude-code", dayAgo(2), "m-a", 100),
      spendRow(h, 0x7301, "claude-code", dayAgo(1), "m-a", 10),
      spendRow(h, 0x7302, "claude-code", dayAgo(1), "m-b", 1),
      spendRow(h, 0x7303, "claude-code", dayAgo(1), "m-a", 1000),
    ]);
    expect(
      await archiveRuns(env, { kind: "archive", workspaceId: ws.workspaceId, runs: [runId(0x7301), runId(0x7302)], dueMs: Date.now() }),
    ).toBe(2);
    await expectExact(ws.workspaceId);
    const page = await (await signedIn(ws.token)).page("/console/spend");
    expect(page.html).toContain(`${usd(1000)} over the last 30 days`);
  });
});
