import { and, asc, eq, inArray, lte } from "drizzle-orm";
import { db, schema } from "./db/client.ts";
import { RUN_COLUMNS, type RunRow } from "./lib/run-rows.ts";
import { ARCHIVE_ROLLUP_SQL } from "./spend/rollup.ts";

/** Runs the sweep hands to the archive queue per cron invocation (every 5 minutes: 576,000 a day). */
export const ARCHIVE_SWEEP = 2000;
/** Runs per archive message: one D1 read and one delete per table, one R2 write per run. */
const RUNS_PER_MESSAGE = 50;

/** A message of the archive queue: runs of one workspace whose rows are due. */
export interface ArchiveMessage {
  kind: "archive";
  workspaceId: string;
  runs: string[];
  /** The sweep's time: a run is archived only if it is still due by then. */
  dueMs: number;
}

/** What the archive holds of a run: its fleet row (with its computer's name) and its spend rows. */
export interface ArchivedRun {
  run: RunRow;
  spend: (typeof schema.spend.$inferSelect)[];
}

/** Where R2 keeps an archived run's rows: per workspace, by run id, so the run stays readable by its id. */
export const archiveKey = (workspaceId: string, runId: string) => `archive/${workspaceId}/runs/${runId}.json`;

/**
 * The cron's archive sweep: ended runs whose `archive_after_ms` passed (their workspace's
 * `rows_kept_days` after their last batch), the oldest due first, one range of `runs_archive`,
 * bounded; sent to the archive queue, whose consumer moves them to R2. A run not archived by the
 * next sweep (the queue is behind, a message failed) is found and sent again: archiving is idempotent.
 */
export async function sweepArchive(env: Env, now: number): Promise<number> {
  const r = schema.runs;
  const due = await db(env)
    .select({ id: r.id, workspaceId: r.workspaceId })
    .from(r)
    .where(lte(r.archiveAfterMs, now))
    .orderBy(asc(r.archiveAfterMs))
    .limit(ARCHIVE_SWEEP)
    .all();
  const byWorkspace = new Map<string, string[]>();
  for (const d of due) byWorkspace.set(d.workspaceId, [...(byWorkspace.get(d.workspaceId) ?? []), d.id]);
  const messages: ArchiveMessage[] = [];
  for (const [workspaceId, ids] of byWorkspace)
    for (let i = 0; i < ids.length; i += RUNS_PER_MESSAGE)
      messages.push({ kind: "archive", workspaceId, runs: ids.slice(i, i + RUNS_PER_MESSAGE), dueMs: now });
  // A sendBatch takes at most 100 messages.
  for (let i = 0; i < messages.length; i += 100)
    await env.ARCHIVE.sendBatch(messages.slice(i, i + 100).map((body) => ({ body, contentType: "json" as const })));
  return due.length;
}

/**
 * Moves one message's runs to R2: each run's row and spend rows as one object, then deletes the
 * rows, only those still due by the sweep's time (a run that came back to life since has a later
 * due time, or none, and stays). Written before deleted, so a consumer that dies in between leaves the rows, and the
 * retry writes the same objects again.
 */
export async function archiveRuns(env: Env, m: ArchiveMessage): Promise<number> {
  const now = m.dueMs;
  const d = db(env);
  const r = schema.runs;
  const s = schema.spend;
  const still = and(eq(r.workspaceId, m.workspaceId), inArray(r.id, m.runs), lte(r.archiveAfterMs, now));
  const rows = await d.select(RUN_COLUMNS).from(r).leftJoin(schema.hosts, eq(schema.hosts.id, r.hostId)).where(still).all();
  if (rows.length === 0) return 0;
  const ids = rows.map((x) => x.id);
  const spend = await d.select().from(s).where(inArray(s.runId, ids)).all();
  await Promise.all(
    rows.map((run) => {
      const archived: ArchivedRun = { run, spend: spend.filter((x) => x.runId === run.id) };
      return env.BODIES.put(archiveKey(m.workspaceId, run.id), JSON.stringify(archived), {
        httpMetadata: { contentType: "application/json" },
      });
    }),
  );
  const due = and(inArray(r.id, ids), lte(r.archiveAfterMs, now));
  const deletes = [d.delete(s).where(inArray(s.runId, d.select({ id: r.id }).from(r).where(due))), d.delete(r).where(due)].map((q) =>
    q.toSQL(),
  );
  // The daily rollup loses what the deletes take (workers/spend/rollup.ts), in the same transaction.
  await env.DB.batch([
    ...ARCHIVE_ROLLUP_SQL.map((q) => env.DB.prepare(q).bind(JSON.stringify(ids), now)),
    ...deletes.map((q) => env.DB.prepare(q.sql).bind(...q.params)),
  ]);
  return rows.length;
}

/** The archive queue's consumer: each message's runs moved to R2; a message that fails is retried. */
export async function consumeArchive(batch: MessageBatch<ArchiveMessage>, env: Env): Promise<void> {
  for (const m of batch.messages) await archiveRuns(env, m.body);
}

/** An archived run's row, read from R2 by its id (null when the workspace archived no such run). */
export async function archivedRun(env: Env, workspaceId: string, runId: string): Promise<ArchivedRun | null> {
  const obj = await env.BODIES.get(archiveKey(workspaceId, runId));
  return obj ? ((await obj.json()) as ArchivedRun) : null;
}
