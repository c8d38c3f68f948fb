// npm run bench:row-size — how many bytes of D1 one run's fleet rows take (its \`runs\` row and two
// \`spend\` rows, with every index the migrations make), measured with SQLite's dbstat over
// BENCH_RUNS runs on node:sqlite (the engine D1 runs), so the capacity plan's "runs a day in total"
// rests on a measurement, not on an estimate from the schema. The reason texts are 80 characters,
// more than the server writes, so the figure errs high. The floor is the same rows with no index.
import { join } from "node:path";
import { migratedDb } from "./migrated-db.ts";

const ROOT = join(import.meta.dirname, "../..");
const RUNS = Number(process.env.BENCH_RUNS ?? 20_000);

const FILL = `
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < ${RUNS - 1})
INSERT INTO runs (id, workspace_id, host_id, harness, agent, session_id, status, outcome, tier, tier_reason, grade, grade_reason,
  spend_microusd, frame_count, lock_count, gap_count, first_frame_ms, last_frame_ms, last_received_ms, version, updated_ms, host_stopped,
  paused_ms, created_ms, unpriced_calls, derived_outcome, derived_reason, model_calls, model_failed, archive_after_ms)
SELECT printf('run_%032x', i*7919), 'ws_0123456789abcdef', printf('h-%016x', i % 1000), 'claude-code', CASE WHEN i%3=0 THEN 'refund-agent' END,
  printf('%08x-0000-4000-8000-%012x', i, i), 'ended', 'completed', 'enforced', substr(printf('%080d', 0) || 'every step hook-attested; model calls through the gateway', 1, 80),
  'verified', substr('complete chain, final lock signed, every body present in the record, no gaps listed ' || printf('%080d', 0), 1, 80),
  123456 + i, 400 + i % 300, 12, i % 3, 1767225600000 + i*1000, 1767229200000 + i*1000, 1767229200500 + i*1000, 40 + i%50, 1767229201000 + i*1000, 0,
  NULL, 1767225600000 + i*1000, 0, 'completed', substr('the agent_stop frame says completed and the last turn ended normally ' || printf('%080d', 0), 1, 80), 30 + i%40, i%2, 1767225600000 + 90*86400000 + i*1000
FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < ${2 * RUNS - 1})
INSERT INTO spend (run_id, day, vendor, model, price_version, workspace_id, host_id, agent, calls, unpriced_calls, microusd, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, version)
SELECT printf('run_%032x', (i/2)*7919), '2026-12-0' || (1 + i%2), 'anthropic', CASE WHEN i%2=0 THEN 'claude-sonnet-4-5' ELSE 'claude-haiku-4-5' END, 'genai-prices@0.1.8',
  'ws_0123456789abcdef', printf('h-%016x', (i/2) % 1000), 'claude-code', 15, 0, 61728, 150000, 20000, 90000, 5000, 40
FROM n;
`;

function measure(indexes: boolean) {
  const db = migratedDb(ROOT);
  if (!indexes)
    for (const { name } of db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('runs', 'spend') AND sql IS NOT NULL")
      .all() as { name: string }[])
      db.exec(`DROP INDEX ${name}`);
  db.exec(FILL);
  const rows = db
    .prepare(
      "SELECT name, sum(pgsize) AS bytes FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name IN ('runs', 'spend')) GROUP BY name ORDER BY bytes DESC",
    )
    .all() as { name: string; bytes: number }[];
  return { rows, perRun: rows.reduce((s, r) => s + r.bytes, 0) / RUNS };
}

const full = measure(true);
const floor = measure(false);
console.log(`bench:row-size — ${RUNS} runs, 2 spend rows each, D1's schema from migrations/\n`);
console.log("| table or index | bytes per run |\n|---|---:|");
for (const r of full.rows) console.log(`| ${r.name} | ${(r.bytes / RUNS).toFixed(0)} |`);
console.log(`| **all** | **${full.perRun.toFixed(0)}** |`);
console.log(`\nfloor (the same rows, no secondary index): ${floor.perRun.toFixed(0)} bytes per run`);
const runsIn10GB = Math.floor(10e9 / full.perRun);
console.log(
  `10 GB hold ${runsIn10GB.toLocaleString("en-US")} runs: ${Math.floor(runsIn10GB / 90).toLocaleString("en-US")} a day at 90 days kept`,
);
console.log(
  `RESULT ${JSON.stringify({ bench: "row-size", runs: RUNS, bytes_per_run: Math.round(full.perRun), floor_bytes_per_run: Math.round(floor.perRun), ratio: Number((full.perRun / floor.perRun).toFixed(2)), runs_in_10gb: runsIn10GB })}`,
);
