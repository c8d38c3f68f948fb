/**
 * Running totals of a workspace's spend, per scope instance and window: what every budget clause
 * is checked against. Each priced call and each lease moves seven counters (the workspace's, its
 * host's and its run's, each of the UTC day and month, and the run's lifetime), so a report, a
 * lease or a policy fetch costs the same on day 1 and day 30, however much spend the month holds.
 *
 * A counter is keyed by a metric, a scope (`workspace`, `host`, `run`), the instance's id (`''`
 * for the workspace) and a period (`d:YYYY-MM-DD`, `m:YYYY-MM`, or `life`). The metric is `usd`
 * (millionths of a dollar) for model calls; anything else with a cost (a hosted tool call) adds its
 * cost to `usd` through {@link addSpend} and may keep counts of its own under another metric (for
 * example `calls:<tool>`), in the same table and by the same rule.
 */
import { utcDay } from "../spend/price.ts";

/** The metric money is counted under. */
export const USD = "usd";
/** A counter nobody moved for this long is deleted: every calendar window it can belong to has ended (a run's lifetime total is forgotten 35 days after its last spend). */
export const COUNTER_KEPT_MS = 35 * 24 * 60 * 60_000;
/** Rows deleted per call, the oldest first: a backlog drains over the next calls, and no call does more than this. */
const PRUNE_STEP = 100;

/** Where spend or a reservation counts: its run, the run's host, and the UTC day it is dated. */
export interface SpendKey {
  runId: string;
  hostId: string;
  day: string;
}

/** A counter's scope. */
export type CounterScope = "workspace" | "host" | "run";

/** The period names of a UTC day: the day's, its month's, and a lifetime's. */
export function periods(day: string): { day: string; month: string; life: string } {
  return { day: `d:${day}`, month: `m:${day.slice(0, 7)}`, life: "life" };
}

/** The period a window covers at `now`. */
export function periodAt(window: "day" | "month" | "run", now: number): string {
  const p = periods(utcDay(now));
  return window === "day" ? p.day : window === "month" ? p.month : p.life;
}

/** One counter moved: where, and its total of spent plus reserved before and after. */
export interface Moved {
  scope: CounterScope;
  period: string;
  before: number;
  after: number;
}

const KEYS: [CounterScope, "day" | "month" | "life"][] = [
  ["workspace", "day"],
  ["workspace", "month"],
  ["host", "day"],
  ["host", "month"],
  ["run", "day"],
  ["run", "month"],
  ["run", "life"],
];

// One counter's parts, by its primary key (0 and 0 when nobody counted there).
function heldAt(sql: SqlStorage, metric: string, scope: CounterScope, id: string, period: string): { spent: number; reserved: number } {
  return (
    sql
      .exec<{ spent: number; reserved: number }>(
        "SELECT spent, reserved FROM counters WHERE metric = ? AND scope = ? AND id = ? AND period = ?",
        metric,
        scope,
        id,
        period,
      )
      .toArray()[0] ?? { spent: 0, reserved: 0 }
  );
}

/**
 * Adds `spent` and `reserved` (either may be negative) to the seven counters of `key`, under
 * `metric`, and answers how each moved (the caller tells from it which budget crossed a limit).
 */
export function addToCounters(sql: SqlStorage, metric: string, key: SpendKey, spent: number, reserved: number, now: number): Moved[] {
  if (spent === 0 && reserved === 0) return [];
  const p = periods(key.day);
  // A direct client's tool call has no host or run (`''`): it counts for the workspace only.
  return KEYS.filter(([scope]) => (scope === "host" ? key.hostId : scope === "run" ? key.runId : "x") !== "").map(([scope, window]) => {
    const id = scope === "workspace" ? "" : scope === "host" ? key.hostId : key.runId;
    const period = p[window];
    const held = heldAt(sql, metric, scope, id, period);
    // Never below 0: a lease shrunk by more than it holds, or given back twice, leaves nothing, not a credit.
    const s = Math.max(0, held.spent + spent);
    const r = Math.max(0, held.reserved + reserved);
    sql.exec(
      `INSERT OR REPLACE INTO counters (metric, scope, id, period, host_id, spent, reserved, used, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      metric,
      scope,
      id,
      period,
      scope === "workspace" ? "" : key.hostId,
      s,
      r,
      s + r,
      now,
    );
    return { scope, period, before: held.spent + held.reserved, after: s + r };
  });
}

/** Adds priced spend (a model call, a hosted tool call's cost) to the money counters. */
export function addSpend(sql: SqlStorage, key: SpendKey, microusd: number, now: number): Moved[] {
  return addToCounters(sql, USD, key, microusd, 0, now);
}

/** A counter's total (spent plus reserved) and its reserved part (0 and 0 when nobody counted there). */
export function counter(
  sql: SqlStorage,
  scope: CounterScope,
  id: string,
  period: string,
  metric = USD,
): { used: number; reserved: number } {
  const row = heldAt(sql, metric, scope, id, period);
  return { used: row.spent + row.reserved, reserved: row.reserved };
}

/** Deletes a bounded step of counters and day totals past every window they can belong to. */
export function prune(sql: SqlStorage, now: number): void {
  sql.exec(
    `DELETE FROM counters WHERE rowid IN (SELECT rowid FROM counters WHERE updated_ms < ? ORDER BY updated_ms LIMIT ${PRUNE_STEP})`,
    now - COUNTER_KEPT_MS,
  );
  // A run reports the totals of the day the server received its calls: older days never change again.
  const yesterday = utcDay(now - 24 * 60 * 60_000);
  sql.exec(`DELETE FROM run_spend WHERE rowid IN (SELECT rowid FROM run_spend WHERE day < ? ORDER BY day LIMIT ${PRUNE_STEP})`, yesterday);
}

const AMOUNT = { run_spend: "microusd", leases: "microusd", tool_calls: "cost_microusd" } as const;
// What an object held before the counters: priced spend, leases, and tool calls' charges (spent once
// forwarded, reserved while in flight; workspace/tool-meter.ts).
const SOURCES: { table: keyof typeof AMOUNT; amount: string; where: string }[] = [
  { table: "run_spend", amount: "sum(microusd), 0", where: "true" },
  { table: "leases", amount: "0, sum(microusd)", where: "true" },
  { table: "tool_calls", amount: "sum(cost_microusd), 0", where: "cost_microusd > 0 AND status <> 'reserved'" },
  { table: "tool_calls", amount: "0, sum(cost_microusd)", where: "cost_microusd > 0 AND status = 'reserved'" },
];

/**
 * The counters' table, and its first contents from the day totals, leases and tool charges an
 * object held before it (workspace/schema.ts, step 4): one pass over them, once.
 */
export const COUNTER_STEPS = [
  `CREATE TABLE counters (metric TEXT NOT NULL, scope TEXT NOT NULL, id TEXT NOT NULL, period TEXT NOT NULL, host_id TEXT NOT NULL,
    spent INTEGER NOT NULL, reserved INTEGER NOT NULL, used INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
    PRIMARY KEY (metric, scope, id, period))`,
  // The largest first, and those at or past a limit: an index range, whatever the workspace holds.
  `CREATE INDEX counters_used ON counters (metric, scope, period, used)`,
  // One host's run counters (a host's policy lists its exhausted runs).
  `CREATE INDEX counters_host ON counters (metric, scope, host_id, period, used)`,
  `CREATE INDEX counters_updated ON counters (updated_ms)`,
  ...SOURCES.flatMap(({ table, amount, where }) =>
    KEYS.map(([scope, window]) => {
      const period = window === "day" ? "'d:' || day" : window === "month" ? "'m:' || substr(day, 1, 7)" : "'life'";
      const id = scope === "workspace" ? "''" : scope === "host" ? "host_id" : "run_id";
      const group = scope === "workspace" ? "p" : "i, p";
      // A direct client's tool call has no host or run: it counts for the workspace only.
      const scoped = scope === "workspace" ? "" : ` AND ${id} IS NOT NULL`;
      return `INSERT INTO counters (metric, scope, id, period, host_id, spent, reserved, used, updated_ms)
        SELECT 'usd', '${scope}', ${id} AS i, ${period} AS p, ${scope === "workspace" ? "''" : "max(host_id)"}, ${amount}, sum(${AMOUNT[table]}),
          CAST(strftime('%s', 'now') AS INTEGER) * 1000
        FROM ${table} WHERE ${where}${scoped} GROUP BY ${group}
        ON CONFLICT (metric, scope, id, period) DO UPDATE SET spent = spent + excluded.spent, reserved = reserved + excluded.reserved,
          used = used + excluded.used`;
    }),
  ),
];
