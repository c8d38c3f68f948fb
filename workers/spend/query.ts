import { and, eq, gte, lte, type SQL, sql } from "drizzle-orm";
import { type Db, schema } from "../db/client.ts";
import { utcDay } from "./price.ts";

/** What spend can be grouped by. */
export const SPEND_GROUPS = ["run", "host", "agent", "model", "day", "month"] as const;
/** One of {@link SPEND_GROUPS}. */
export type SpendGroup = (typeof SPEND_GROUPS)[number];

/** Filters of a spend query; days are UTC `YYYY-MM-DD`, inclusive. */
export interface SpendFilter {
  workspaceId: string;
  from?: string;
  to?: string;
  host?: string;
  agent?: string;
  run?: string;
}

type Source = typeof schema.spend | typeof schema.spendDaily | typeof schema.spendDailyRuns;

function columns(s: Source): Partial<Record<SpendGroup, Record<string, SQL>>> {
  // The rollups hold a computer's own chain's agent as '' (a key column is never null): answered as null, as the spend rows hold it.
  const agent = s === schema.spend ? sql<string | null>`${s.agent}` : sql<string | null>`nullif(${s.agent}, '')`;
  return {
    ...("runId" in s ? { run: { run: sql<string>`${s.runId}` } } : {}),
    host: { host: sql<string>`${s.hostId}` },
    agent: { agent },
    ...("model" in s ? { model: { vendor: sql<string>`${s.vendor}`, model: sql<string>`${s.model}` } } : {}),
    day: { day: sql<string>`${s.day}` },
    month: { month: sql<string>`substr(${s.day}, 1, 7)` },
  };
}

function filters(s: Source, f: SpendFilter): SQL | undefined {
  const where: SQL[] = [eq(s.workspaceId, f.workspaceId)];
  if (f.from) where.push(gte(s.day, f.from));
  if (f.to) where.push(lte(s.day, f.to));
  if (f.host) where.push(eq(s.hostId, f.host));
  if (f.agent) where.push(eq(s.agent, f.agent));
  if (f.run && "runId" in s) where.push(eq(s.runId, f.run));
  return and(...where);
}

function keysOf(s: Source, groupBy: SpendGroup[]): Record<string, SQL> {
  const all = columns(s);
  return Object.assign({}, ...groupBy.map((g) => all[g])) as Record<string, SQL>;
}

/**
 * Whether the daily rollup holds the answer exactly: not per run, and its `runs` countable from
 * `spend_daily_runs` (per day; or, without a day, over a period that ends today, each run on its
 * latest day with calls). Grouped by model or month, a run's distinct count needs its rows.
 */
export function rollupServes(f: SpendFilter, groupBy: SpendGroup[], today = utcDay(Date.now())): boolean {
  if (f.run || groupBy.some((g) => g === "run" || g === "model" || g === "month")) return false;
  return groupBy.includes("day") || !f.to || f.to >= today;
}

async function sums(d: Db, s: typeof schema.spend | typeof schema.spendDaily, f: SpendFilter, groupBy: SpendGroup[], limit: number) {
  const keys = keysOf(s, groupBy);
  return d
    .select({
      ...keys,
      microusd: sql<number>`sum(${s.microusd})`,
      ...(s === schema.spend ? { runs: sql<number>`count(DISTINCT ${schema.spend.runId})` } : {}),
      calls: sql<number>`sum(${s.calls})`,
      unpriced_calls: sql<number>`sum(${s.unpricedCalls})`,
      input_tokens: sql<number>`sum(${s.inputTokens})`,
      output_tokens: sql<number>`sum(${s.outputTokens})`,
      cache_read_tokens: sql<number>`sum(${s.cacheReadTokens})`,
      cache_write_tokens: sql<number>`sum(${s.cacheWriteTokens})`,
      price_versions: sql<string | null>`group_concat(DISTINCT nullif(${s.priceVersion}, ''))`,
    })
    .from(s)
    .where(filters(s, f))
    .groupBy(...Object.values(keys))
    .having(sql`sum(${s.calls}) > 0`)
    .orderBy(sql`sum(${s.microusd}) DESC`, ...Object.values(keys))
    .limit(limit)
    .all() as Promise<
    (Record<string, unknown> & {
      microusd: number;
      runs?: number;
      calls: number;
      unpriced_calls: number;
      price_versions: string | null;
    } & Record<"input_tokens" | "output_tokens" | "cache_read_tokens" | "cache_write_tokens", number>)[]
  >;
}

/** The runs with calls per group, from `spend_daily_runs` ({@link rollupServes} says when this is exact). */
async function rollupRuns(d: Db, f: SpendFilter, groupBy: SpendGroup[]): Promise<Map<string, number>> {
  const s = schema.spendDailyRuns;
  const keys = keysOf(s, groupBy);
  const count = groupBy.includes("day") ? sql<number>`sum(${s.runs})` : sql<number>`sum(${s.runsLast})`;
  const rows = await d
    .select({ ...keys, runs: count })
    .from(s)
    .where(filters(s, f))
    .groupBy(...Object.values(keys))
    .all();
  return new Map(rows.map((r) => [JSON.stringify(Object.keys(keys).map((k) => (r as Record<string, unknown>)[k])), r.runs]));
}

/**
 * Spend totals grouped as asked: the one definition of spend over a time, which `GET /v1/spend`
 * answers and the console's Spend page shows. Each model call counts on the UTC day the server
 * received (and priced) it, never by the computer's clock or the run's last frame, so a run that
 * crosses midnight has spend on both days. Priced calls sum into `microusd`; unpriced calls are
 * only counted (`unpriced_calls`), never as $0. `runs` counts the runs with calls in the group
 * (null where `countRuns` is false and the rollup is read); `price_versions` names the price
 * tables the totals were priced with. Read from the daily rollup where it holds the answer
 * ({@link rollupServes}, or always with `countRuns: false`), else from the spend rows.
 */
export async function spendTotals(d: Db, f: SpendFilter, groupBy: SpendGroup[], limit: number, countRuns = true) {
  const rollup = countRuns ? rollupServes(f, groupBy) : !f.run && !groupBy.includes("run");
  const rows = await sums(d, rollup ? schema.spendDaily : schema.spend, f, groupBy, limit);
  const runs = rollup && countRuns ? await rollupRuns(d, f, groupBy) : null;
  const names = Object.keys(keysOf(schema.spend, groupBy));
  return rows
    .filter((r) => r.calls !== null)
    .map((r) => ({
      ...r,
      runs: rollup ? (runs?.get(JSON.stringify(names.map((k) => r[k]))) ?? null) : (r.runs as number),
      // A group of unpriced calls only has no price: null, never $0.
      microusd: r.calls > r.unpriced_calls ? r.microusd : null,
      priced_calls: r.calls - r.unpriced_calls,
      price_versions: r.price_versions ? r.price_versions.split(",").sort() : [],
    }));
}
