/**
 * The daily spend rollup (`spend_daily`, `spend_daily_runs`: workers/db/schema.ts): kept by the
 * projection's consumer in the transaction that writes the `spend` rows, read by the Spend page.
 *
 * Exact under redelivery by construction: each statement reads the `spend` rows as they are
 * before the batch's upsert of them (it runs just before it, in the same `DB.batch`), and adds to
 * the rollup what the upsert will change, new minus stored, for exactly the rows the upsert's
 * own version guard lets through. A message delivered again, or an older one after a newer one,
 * passes no guard and adds nothing; a consumer killed mid-batch wrote nothing (the batch is one
 * transaction). So the rollup is always the `spend` rows summed. The run counts take a run-day's
 * cell (host, agent) from any one of its rows: a chain sends all of a day's rows together, so they
 * share it.
 */

/** The batch's spend rows (one JSON array parameter), the `spend` rows they would replace, and those the upsert writes. */
const WRITTEN = `n AS (
    SELECT json_extract(value, '$.runId') AS run_id, json_extract(value, '$.day') AS day, json_extract(value, '$.vendor') AS vendor,
      json_extract(value, '$.model') AS model, json_extract(value, '$.priceVersion') AS price_version,
      json_extract(value, '$.workspaceId') AS workspace_id, json_extract(value, '$.hostId') AS host_id,
      coalesce(json_extract(value, '$.agent'), '') AS agent, json_extract(value, '$.version') AS version,
      json_extract(value, '$.calls') AS calls, json_extract(value, '$.unpricedCalls') AS unpriced_calls,
      json_extract(value, '$.microusd') AS microusd, json_extract(value, '$.inputTokens') AS input_tokens,
      json_extract(value, '$.outputTokens') AS output_tokens, json_extract(value, '$.cacheReadTokens') AS cache_read_tokens,
      json_extract(value, '$.cacheWriteTokens') AS cache_write_tokens
    FROM json_each(?)),
  w AS (SELECT n.*, o.run_id IS NOT NULL AS replaces FROM n LEFT JOIN spend o ON o.run_id = n.run_id AND o.day = n.day
    AND o.vendor = n.vendor AND o.model = n.model AND o.price_version = n.price_version
    WHERE o.run_id IS NULL OR n.version > o.version)`;

const SUMS = ["calls", "unpriced_calls", "microusd", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"];

const ADD_SUMS = `ON CONFLICT (workspace_id, day, host_id, agent, vendor, model, price_version) DO UPDATE SET
    ${SUMS.map((c) => `${c} = spend_daily.${c} + excluded.${c}`).join(", ")}`;
const ADD_RUNS = `ON CONFLICT (workspace_id, day, host_id, agent) DO UPDATE SET
    runs = spend_daily_runs.runs + excluded.runs, runs_last = spend_daily_runs.runs_last + excluded.runs_last`;

/** Adds each written row's new totals to its cell and takes the stored row's off its own (a row that moved cell moves). */
export const SPEND_DAILY_SQL = `WITH ${WRITTEN},
  d AS (
    SELECT workspace_id, day, host_id, agent, vendor, model, price_version, ${SUMS.join(", ")} FROM w
    UNION ALL
    SELECT o.workspace_id, o.day, o.host_id, coalesce(o.agent, ''), o.vendor, o.model, o.price_version, ${SUMS.map((c) => `-o.${c}`).join(", ")}
    FROM w JOIN spend o ON o.run_id = w.run_id AND o.day = w.day AND o.vendor = w.vendor AND o.model = w.model
      AND o.price_version = w.price_version)
  INSERT INTO spend_daily (workspace_id, day, host_id, agent, vendor, model, price_version, ${SUMS.join(", ")})
  SELECT workspace_id, day, host_id, agent, vendor, model, price_version, ${SUMS.map((c) => `sum(${c})`).join(", ")}
  FROM d WHERE true GROUP BY workspace_id, day, host_id, agent, vendor, model, price_version ${ADD_SUMS}`;

/**
 * Moves the runs' counts: a run-day written counts once in its cell (and leaves the cell its stored
 * rows had); a run's latest day with calls counts once in `runs_last`, moved from its stored latest
 * day when the batch brings a later one.
 */
export const SPEND_DAILY_RUNS_SQL = `WITH ${WRITTEN},
  rd AS (SELECT run_id, day, workspace_id, host_id, agent FROM w GROUP BY run_id, day),
  od AS (SELECT o.run_id, o.day, o.workspace_id, o.host_id, coalesce(o.agent, '') AS agent
    FROM rd JOIN spend o ON o.run_id = rd.run_id AND o.day = rd.day GROUP BY o.run_id, o.day),
  lr AS (SELECT run_id, max(day) AS w_day, (SELECT max(day) FROM spend o WHERE o.run_id = w.run_id) AS o_day FROM w GROUP BY run_id),
  d AS (
    SELECT workspace_id, day, host_id, agent, 1 AS runs, 0 AS runs_last FROM rd
    UNION ALL SELECT workspace_id, day, host_id, agent, -1, 0 FROM od
    UNION ALL SELECT o.workspace_id, o.day, o.host_id, coalesce(o.agent, ''), 0, -1
      FROM lr JOIN spend o ON o.run_id = lr.run_id AND o.day = lr.o_day GROUP BY lr.run_id
    UNION ALL SELECT rd.workspace_id, rd.day, rd.host_id, rd.agent, 0, 1
      FROM lr JOIN rd ON rd.run_id = lr.run_id AND rd.day = lr.w_day WHERE lr.o_day IS NULL OR lr.w_day >= lr.o_day
    UNION ALL SELECT o.workspace_id, o.day, o.host_id, coalesce(o.agent, ''), 0, 1
      FROM lr JOIN spend o ON o.run_id = lr.run_id AND o.day = lr.o_day WHERE lr.w_day < lr.o_day GROUP BY lr.run_id)
  INSERT INTO spend_daily_runs (workspace_id, day, host_id, agent, runs, runs_last)
  SELECT workspace_id, day, host_id, agent, sum(runs), sum(runs_last) FROM d WHERE true GROUP BY workspace_id, day, host_id, agent
  ${ADD_RUNS}`;

/** The spend rows the archive is about to delete: of the runs in `?1` (a JSON array) still due by `?2`. */
const ARCHIVED = `gone AS (SELECT run_id, day, workspace_id, host_id, coalesce(agent, '') AS agent, vendor, model, price_version,
    ${SUMS.join(", ")} FROM spend
    WHERE run_id IN (SELECT id FROM runs WHERE id IN (SELECT value FROM json_each(?1)) AND archive_after_ms <= ?2))`;

/**
 * The archive's share (workers/archive.ts), run in the transaction that deletes the rows: their
 * totals and their runs' counts taken off the rollup, which stays the spend rows summed (a run
 * that comes back to life later counts again from what it sends).
 */
export const ARCHIVE_ROLLUP_SQL = [
  `WITH ${ARCHIVED}
  INSERT INTO spend_daily (workspace_id, day, host_id, agent, vendor, model, price_version, ${SUMS.join(", ")})
  SELECT workspace_id, day, host_id, agent, vendor, model, price_version, ${SUMS.map((c) => `-sum(${c})`).join(", ")}
  FROM gone WHERE true GROUP BY workspace_id, day, host_id, agent, vendor, model, price_version ${ADD_SUMS}`,
  `WITH ${ARCHIVED},
  rd AS (SELECT run_id, day, workspace_id, host_id, agent FROM gone GROUP BY run_id, day),
  last AS (SELECT run_id, max(day) AS day FROM rd GROUP BY run_id)
  INSERT INTO spend_daily_runs (workspace_id, day, host_id, agent, runs, runs_last)
  SELECT rd.workspace_id, rd.day, rd.host_id, rd.agent, -count(*), -sum(rd.day = last.day) FROM rd JOIN last ON last.run_id = rd.run_id
  WHERE true GROUP BY rd.workspace_id, rd.day, rd.host_id, rd.agent ${ADD_RUNS}`,
];
