import { and, desc, eq, gte, sql } from "drizzle-orm";
import { db, schema } from "../db/client.ts";
import { spendTotals } from "../spend/query.ts";

/** One row of a spend breakdown: the key, the runs, and their spend in millionths of a US dollar. */
export interface SpendRow {
  key: string;
  runs: number;
  microusd: number;
}

/**
 * The workspace's spend since the UTC day of `fromMs`. By day (and so the period's total) and by
 * model: the priced calls by the day the server received each (`spendTotals`, exactly as
 * `GET /v1/spend?group_by=day|model` answers). By harness or agent and by computer: the runs with
 * a frame since `fromMs`, each with its whole spend as the runs list shows it.
 */
export async function spendSince(env: Env, workspaceId: string, fromMs: number) {
  const r = schema.runs;
  const from = new Date(fromMs).toISOString().slice(0, 10);
  const where = and(eq(r.workspaceId, workspaceId), gte(sql`coalesce(${r.lastFrameMs}, 0)`, fromMs));
  const by = (key: ReturnType<typeof sql<string>>) =>
    db(env)
      .select({ key, runs: sql<number>`count(*)`, microusd: sql<number>`sum(${r.spendMicrousd})` })
      .from(r)
      .where(where)
      .groupBy(key)
      .orderBy(desc(sql`sum(${r.spendMicrousd})`))
      .all() as Promise<SpendRow[]>;
  const [days, agent, host, model] = await Promise.all([
    spendTotals(db(env), { workspaceId, from }, ["day"], 1000),
    by(sql<string>`coalesce(${r.agent}, ${r.harness})`),
    by(sql<string>`${r.hostId}`),
    spendTotals(db(env), { workspaceId, from }, ["model"], 200),
  ]);
  const day: SpendRow[] = days.map((d) => ({ key: String((d as Record<string, unknown>).day), runs: d.runs, microusd: d.microusd ?? 0 }));
  day.sort((a, b) => (a.key < b.key ? 1 : -1));
  return { day, agent, host, model };
}
