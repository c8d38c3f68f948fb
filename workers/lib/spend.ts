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
 * The workspace's spend since `fromMs` (by last frame time), summed from the run rows' spend (the
 * same figure the runs list shows): by UTC day, by harness or agent, by computer. By model comes from
 * the priced calls in the `spend` table (`spendTotals`, as `GET /v1/spend` answers), from the UTC day
 * of `fromMs` on.
 */
export async function spendSince(env: Env, workspaceId: string, fromMs: number) {
  const r = schema.runs;
  const where = and(eq(r.workspaceId, workspaceId), gte(sql`coalesce(${r.lastFrameMs}, 0)`, fromMs));
  const by = (key: ReturnType<typeof sql<string>>) =>
    db(env)
      .select({ key, runs: sql<number>`count(*)`, microusd: sql<number>`sum(${r.spendMicrousd})` })
      .from(r)
      .where(where)
      .groupBy(key)
      .orderBy(desc(sql`sum(${r.spendMicrousd})`))
      .all() as Promise<SpendRow[]>;
  const [day, agent, host, model] = await Promise.all([
    by(sql<string>`strftime('%Y-%m-%d', coalesce(${r.lastFrameMs}, 0) / 1000, 'unixepoch')`),
    by(sql<string>`coalesce(${r.agent}, ${r.harness})`),
    by(sql<string>`${r.hostId}`),
    spendTotals(db(env), { workspaceId, from: new Date(fromMs).toISOString().slice(0, 10) }, ["model"], 200),
  ]);
  day.sort((a, b) => (a.key < b.key ? 1 : -1));
  return { day, agent, host, model };
}
