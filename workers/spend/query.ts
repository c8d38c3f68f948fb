import { and, eq, gte, lte, type SQL, sql } from "drizzle-orm";
import { type Db, schema } from "../db/client.ts";

/** What spend can be grouped by. */
export const SPEND_GROUPS = ["run", "host", "agent", "model", "day", "month"] as const;
/** One of {@link SPEND_GROUPS}. */
export type SpendGroup = (typeof SPEND_GROUPS)[number];

const s = schema.spend;
const COLUMNS: Record<SpendGroup, Record<string, SQL>> = {
  run: { run: sql<string>`${s.runId}` },
  host: { host: sql<string>`${s.hostId}` },
  agent: { agent: sql<string | null>`${s.agent}` },
  model: { vendor: sql<string>`${s.vendor}`, model: sql<string>`${s.model}` },
  day: { day: sql<string>`${s.day}` },
  month: { month: sql<string>`substr(${s.day}, 1, 7)` },
};

/** Filters of a spend query; days are UTC `YYYY-MM-DD`, inclusive. */
export interface SpendFilter {
  workspaceId: string;
  from?: string;
  to?: string;
  host?: string;
  agent?: string;
  run?: string;
}

/**
 * Spend totals grouped as asked: the one definition of spend over a time, which `GET /v1/spend`
 * answers and the console's Spend page shows. Each model call counts on the UTC day the server
 * received (and priced) it, never by the computer's clock or the run's last frame, so a run that
 * crosses midnight has spend on both days. Priced calls sum into `microusd`; unpriced calls are
 * only counted (`unpriced_calls`), never as $0. `runs` counts the runs with calls in the group;
 * `price_versions` names the price tables the totals were priced with.
 */
export async function spendTotals(d: Db, f: SpendFilter, groupBy: SpendGroup[], limit: number) {
  const where: SQL[] = [eq(s.workspaceId, f.workspaceId)];
  if (f.from) where.push(gte(s.day, f.from));
  if (f.to) where.push(lte(s.day, f.to));
  if (f.host) where.push(eq(s.hostId, f.host));
  if (f.agent) where.push(eq(s.agent, f.agent));
  if (f.run) where.push(eq(s.runId, f.run));
  const keys = Object.assign({}, ...groupBy.map((g) => COLUMNS[g])) as Record<string, SQL>;
  const rows = await d
    .select({
      ...keys,
      microusd: sql<number>`sum(${s.microusd})`,
      runs: sql<number>`count(DISTINCT ${s.runId})`,
      calls: sql<number>`sum(${s.calls})`,
      unpriced_calls: sql<number>`sum(${s.unpricedCalls})`,
      input_tokens: sql<number>`sum(${s.inputTokens})`,
      output_tokens: sql<number>`sum(${s.outputTokens})`,
      cache_read_tokens: sql<number>`sum(${s.cacheReadTokens})`,
      cache_write_tokens: sql<number>`sum(${s.cacheWriteTokens})`,
      price_versions: sql<string | null>`group_concat(DISTINCT nullif(${s.priceVersion}, ''))`,
    })
    .from(s)
    .where(and(...where))
    .groupBy(...Object.values(keys))
    .orderBy(sql`sum(${s.microusd}) DESC`, ...Object.values(keys))
    .limit(limit)
    .all();
  return rows
    .filter((r) => r.calls !== null)
    .map((r) => ({
      ...r,
      // A group of unpriced calls only has no price: null, never $0.
      microusd: r.calls > r.unpriced_calls ? r.microusd : null,
      priced_calls: r.calls - r.unpriced_calls,
      price_versions: r.price_versions ? r.price_versions.split(",").sort() : [],
    }));
}
