/**
 * Running counts of a workspace's tool calls, for the tools' call-count limits: in the counters
 * table (workspace/counters.ts) under the metric `calls:<tool>`, per scope instance (the
 * workspace; the call's host, agent and run, `''` for a call without one) and period (the UTC
 * hour, day and month the call was made in, and `life` for a run's whole). Every counted call
 * moves all sixteen, whichever limits the tool has now, so a limit added later counts the calls
 * its window already holds; a call's admission reads one counter per limit, however many calls
 * the window holds.
 */
import type { CallLimit } from "../tools/schema.ts";

/** What a call is counted by. */
export interface CountedCall {
  tool: string;
  hostId: string | null;
  agent: string | null;
  runId: string | null;
}

const SCOPES = ["workspace", "host", "agent", "run"] as const;
const WINDOWS = ["hour", "day", "month", "run"] as const;

/** The metric a tool's calls are counted under. */
export const callMetric = (tool: string) => `calls:${tool}`;

/** The period of `window` that holds `ms` (`life` for a run's). */
export function callPeriod(window: CallLimit["window"], ms: number): string {
  const iso = new Date(ms).toISOString();
  if (window === "hour") return `h:${iso.slice(0, 13)}`;
  if (window === "day") return `d:${iso.slice(0, 10)}`;
  if (window === "month") return `m:${iso.slice(0, 7)}`;
  return "life";
}

function instance(c: CountedCall, scope: CallLimit["scope"]): string {
  return (scope === "workspace" ? "" : scope === "host" ? c.hostId : scope === "agent" ? c.agent : c.runId) ?? "";
}

/** The calls of `c`'s tool counted so far in `limit`'s scope instance and current window. */
export function callsCounted(sql: SqlStorage, c: CountedCall, limit: CallLimit, now: number): number {
  const row = sql
    .exec<{ spent: number }>(
      "SELECT spent FROM counters WHERE metric = ? AND scope = ? AND id = ? AND period = ?",
      callMetric(c.tool),
      limit.scope,
      instance(c, limit.scope),
      callPeriod(limit.window, now),
    )
    .toArray()[0];
  return row?.spent ?? 0;
}

/** Counts a call made at `madeMs` in every counter of `c` (`delta` 1), or takes it back (-1: found never forwarded): one statement. */
export function countCall(sql: SqlStorage, c: CountedCall, delta: 1 | -1, madeMs: number, now: number): void {
  const keys = SCOPES.flatMap((scope) => WINDOWS.map((window) => [scope, instance(c, scope), callPeriod(window, madeMs)]));
  // One JSON parameter for the sixteen keys: a statement binds at most 100 values.
  const params = [callMetric(c.tool), JSON.stringify(keys), now];
  if (delta === 1) {
    sql.exec(
      `INSERT INTO counters (metric, scope, id, period, host_id, spent, reserved, used, updated_ms)
       SELECT ?1, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), ?4, 1, 0, 1, ?3
       FROM json_each(?2) WHERE true
       ON CONFLICT (metric, scope, id, period) DO UPDATE SET spent = spent + 1, used = used + 1, updated_ms = excluded.updated_ms`,
      ...params,
      c.hostId ?? "",
    );
  } else {
    sql.exec(
      `UPDATE counters SET spent = max(0, spent - 1), used = max(0, used - 1), updated_ms = ?3
       WHERE metric = ?1 AND (scope, id, period) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?2))`,
      ...params,
    );
  }
}

/** Storage step: the counts of the calls an object's meter already held counted (one pass, once). */
export const CALL_COUNT_STEPS = SCOPES.flatMap((scope) =>
  WINDOWS.map((window) => {
    const id = scope === "workspace" ? "''" : `coalesce(${scope === "host" ? "host_id" : scope === "agent" ? "agent" : "run_id"}, '')`;
    const period = {
      hour: "'h:' || strftime('%Y-%m-%dT%H', ts_ms / 1000, 'unixepoch')",
      day: "'d:' || day",
      month: "'m:' || substr(day, 1, 7)",
      run: "'life'",
    }[window];
    return `INSERT INTO counters (metric, scope, id, period, host_id, spent, reserved, used, updated_ms)
      SELECT 'calls:' || tool AS m, '${scope}', ${id} AS i, ${period} AS p, coalesce(max(host_id), ''), count(*), 0, count(*), max(ts_ms)
      FROM tool_calls WHERE counted = 1 GROUP BY m, i, p
      ON CONFLICT (metric, scope, id, period) DO UPDATE SET spent = spent + excluded.spent, used = used + excluded.used`;
  }),
);
