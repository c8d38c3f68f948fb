import { getTableColumns, getTableName } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { schema } from "../db/client.ts";
import { agentKind } from "../lib/health.ts";
import { SPEND_DAILY_RUNS_SQL, SPEND_DAILY_SQL } from "../spend/rollup.ts";
import type { AgentSeen, ProjectionMessage } from "./messages.ts";

/** The most JSON text one statement's parameter carries: a large batch is written as a few statements. */
const MAX_PARAM_CHARS = 900_000;

type Columns<T extends SQLiteTable> = (keyof T["$inferInsert"] & string)[];

/**
 * `INSERT INTO table (…) SELECT … FROM json_each(?) … ON CONFLICT`: every row of a JSON array in
 * one statement with one bound parameter (D1 binds at most 100 a statement; a row of `runs` has 28
 * columns), keyed by the rows' own property names.
 */
function upsertJson<T extends SQLiteTable>(
  table: T,
  keys: Columns<T>,
  conflict: string[],
  update: string,
  computed: Record<string, string> = {},
): string {
  const all = getTableColumns(table) as Record<string, { name: string }>;
  const cols = [...keys.map((k) => all[k]!.name), ...Object.keys(computed)];
  const picks = [...keys.map((k) => `json_extract(value, '$.${k}')`), ...Object.values(computed)];
  // `WHERE true`: SQLite's parser needs it between a SELECT and ON CONFLICT.
  return `INSERT INTO ${getTableName(table)} (${cols.join(", ")}) SELECT ${picks.join(", ")} FROM json_each(?) WHERE true
    ON CONFLICT (${conflict.join(", ")}) DO UPDATE SET ${update}`;
}

function setExcluded<T extends SQLiteTable>(table: T, keys: Columns<T>): string {
  const all = getTableColumns(table) as Record<string, { name: string }>;
  return keys.map((k) => `${all[k]!.name} = excluded.${all[k]!.name}`).join(", ");
}

const RUN_KEYS: Columns<typeof schema.runs> = [
  "id",
  "workspaceId",
  "hostId",
  "harness",
  "agent",
  "sessionId",
  "status",
  "outcome",
  "derivedOutcome",
  "derivedReason",
  "modelCalls",
  "modelFailed",
  "tier",
  "tierReason",
  "grade",
  "gradeReason",
  "spendMicrousd",
  "unpricedCalls",
  "frameCount",
  "lockCount",
  "gapCount",
  "firstFrameMs",
  "lastFrameMs",
  "lastReceivedMs",
  "version",
  "updatedMs",
  "hostStopped",
  "createdMs",
];
const RUN_IDENTITY = new Set(["id", "workspaceId", "hostId", "harness", "agent", "sessionId", "createdMs"]);
// An ended run's rows go to the archive its workspace's `rows_kept_days` after its last batch (workers/archive.ts);
// a live one's never (a run that comes back to life leaves the sweep's range).
const ARCHIVE_AFTER = `CASE WHEN json_extract(value, '$.status') = 'live' THEN NULL
    ELSE coalesce(json_extract(value, '$.lastReceivedMs'), json_extract(value, '$.updatedMs'))
      + (SELECT rows_kept_days FROM workspaces WHERE workspaces.id = json_extract(value, '$.workspaceId')) * 86400000 END`;
const RUNS_SQL = upsertJson(
  schema.runs,
  RUN_KEYS,
  ["id"],
  `${setExcluded(
    schema.runs,
    RUN_KEYS.filter((k) => !RUN_IDENTITY.has(k)),
  )}, archive_after_ms = excluded.archive_after_ms WHERE excluded.version > runs.version`,
  { archive_after_ms: ARCHIVE_AFTER },
);

const SPEND_KEYS: Columns<typeof schema.spend> = [
  "runId",
  "day",
  "vendor",
  "model",
  "priceVersion",
  "workspaceId",
  "hostId",
  "agent",
  "calls",
  "unpricedCalls",
  "microusd",
  "inputTokens",
  "outputTokens",
  "cacheReadTokens",
  "cacheWriteTokens",
  "version",
];
const SPEND_SQL = upsertJson(
  schema.spend,
  SPEND_KEYS,
  ["run_id", "day", "vendor", "model", "price_version"],
  `${setExcluded(
    schema.spend,
    SPEND_KEYS.filter((k) => !["runId", "day", "vendor", "model", "priceVersion"].includes(k)),
  )} WHERE excluded.version > spend.version`,
);

// The agent's row takes each run's latest word: delivered now, pending or not, refused or not.
const AGENTS_SQL = `INSERT INTO agents (host_id, name, workspace_id, kind, created_ms, first_seen_ms, last_seen_ms, last_delivered_ms,
    pending_since_ms, last_refused_ms)
  SELECT json_extract(value, '$.hostId'), json_extract(value, '$.name'), json_extract(value, '$.workspaceId'), json_extract(value, '$.kind'),
    json_extract(value, '$.deliveredMs'), json_extract(value, '$.deliveredMs'), json_extract(value, '$.deliveredMs'),
    json_extract(value, '$.deliveredMs'), json_extract(value, '$.pendingSinceMs'), json_extract(value, '$.refusedMs')
  FROM json_each(?) WHERE true
  ON CONFLICT (host_id, name) DO UPDATE SET
    first_seen_ms = coalesce(agents.first_seen_ms, excluded.first_seen_ms),
    last_seen_ms = max(coalesce(agents.last_seen_ms, 0), excluded.last_seen_ms),
    last_delivered_ms = max(coalesce(agents.last_delivered_ms, 0), excluded.last_delivered_ms),
    pending_since_ms = CASE WHEN excluded.pending_since_ms IS NULL THEN NULL
      ELSE coalesce(agents.pending_since_ms, excluded.pending_since_ms) END,
    degraded_ms = CASE WHEN excluded.pending_since_ms IS NULL THEN NULL ELSE agents.degraded_ms END,
    last_refused_ms = CASE WHEN excluded.last_refused_ms IS NULL THEN agents.last_refused_ms
      ELSE max(coalesce(agents.last_refused_ms, 0), excluded.last_refused_ms) END`;

const HOSTS_SQL = `UPDATE hosts SET last_seen_ms = max(coalesce(hosts.last_seen_ms, 0), s.seen)
  FROM (SELECT json_extract(value, '$.hostId') AS id, max(json_extract(value, '$.lastSeenMs')) AS seen FROM json_each(?) GROUP BY id) AS s
  WHERE hosts.id = s.id`;

/** Splits rows into JSON arrays of at most {@link MAX_PARAM_CHARS} characters. */
function chunks(rows: unknown[]): string[] {
  const out: string[] = [];
  let part: string[] = [];
  let size = 2;
  for (const r of rows) {
    const text = JSON.stringify(r);
    if (part.length > 0 && size + text.length + 1 > MAX_PARAM_CHARS) {
      out.push(`[${part.join(",")}]`);
      part = [];
      size = 2;
    }
    part.push(text);
    size += text.length + 1;
  }
  if (part.length > 0) out.push(`[${part.join(",")}]`);
  return out;
}

/**
 * The D1 statements that write a batch of projection messages: of each run only its newest state,
 * then at most one statement per table (more only past {@link MAX_PARAM_CHARS}), and two for the
 * daily spend rollup, whatever the batch's size. Every statement is an idempotent upsert guarded by the owner's version.
 */
export function projectionStatements(db: D1Database, messages: ProjectionMessage[]): D1PreparedStatement[] {
  const chains = new Map<string, Extract<ProjectionMessage, { kind: "chain" }>>();
  const seen: { hostId: string; lastSeenMs: number }[] = [];
  for (const m of messages) {
    if (m.kind === "host_seen") seen.push({ hostId: m.hostId, lastSeenMs: m.lastSeenMs });
    else if ((chains.get(m.chain)?.version ?? -1) <= m.version) chains.set(m.chain, m);
  }
  const latest = [...chains.values()];
  const agents = new Map<string, AgentSeen & { kind: "harness" | "custom" }>();
  for (const m of latest) {
    if (!m.agent) continue;
    const key = `${m.agent.hostId} ${m.agent.name}`;
    const before = agents.get(key);
    if (!before || before.deliveredMs <= m.agent.deliveredMs) agents.set(key, { ...m.agent, kind: agentKind(m.agent.name) });
  }
  const statements: D1PreparedStatement[] = [];
  const add = (sql: string, rows: unknown[]) => {
    for (const json of chunks(rows)) statements.push(db.prepare(sql).bind(json));
  };
  add(
    RUNS_SQL,
    latest.flatMap((m) => (m.run ? [{ createdMs: m.run.updatedMs, ...m.run }] : [])),
  );
  // Each part's rollup statements read the spend rows before that part's upsert writes them (workers/spend/rollup.ts).
  for (const json of chunks(latest.flatMap((m) => m.spend))) {
    for (const sql of [SPEND_DAILY_SQL, SPEND_DAILY_RUNS_SQL, SPEND_SQL]) statements.push(db.prepare(sql).bind(json));
  }
  add(AGENTS_SQL, [...agents.values()]);
  add(HOSTS_SQL, seen);
  return statements;
}

/**
 * The projection's consumer: writes a batch's fleet rows to D1 in one transaction (`DB.batch`).
 * A batch that fails is thrown back whole, so the queue delivers it again (with a delay) and the
 * D1 rows catch up; the version guards make the retry, and a batch half written by a consumer
 * that died, safe to write again.
 */
export async function consumeProjection(batch: MessageBatch<ProjectionMessage>, env: Env): Promise<void> {
  const statements = projectionStatements(
    env.DB,
    batch.messages.map((m) => m.body),
  );
  if (statements.length > 0) await env.DB.batch(statements);
}
