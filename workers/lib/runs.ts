import { and, desc, eq, gte, lt, lte, or, type SQL, sql } from "drizzle-orm";
import { z } from "zod";
import { BUNDLE_V2_PAYLOAD_TYPE, type CoverageFacts, exportFileName, type Gap, GRADES, TIERS } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { signingKey } from "../keys.ts";
import { bundleStream } from "./export-stream.ts";
import { setPaused } from "./policy-store.ts";
import { type Propagation, pushHost } from "./push.ts";
import { RUN_COLUMNS, type RunRow, runView, syncRun } from "./run-rows.ts";
import { spendTotals } from "../spend/query.ts";

/** Run statuses, as the D1 row and the manifest name them. */
export const RUN_STATUSES = ["live", "ended", "crashed", "closed", "sealed"] as const;
const int = z.coerce.number().int().nonnegative();

/** The run list's filters and page (the API's query and the console's form). */
export const RunListQuery = z.strictObject({
  status: z.enum(RUN_STATUSES).optional(),
  tier: z.enum(TIERS).optional(),
  grade: z.enum(GRADES).optional(),
  host: z.string().min(1).max(64).optional(),
  agent: z.string().min(1).max(64).optional(),
  from: int.optional(),
  to: int.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z
    .string()
    .regex(/^\d+:run_[0-9a-f]{32}$/)
    .optional(),
});
/** One of {@link RunListQuery}. */
export type RunListQuery = z.output<typeof RunListQuery>;

const chain = (env: Env, id: string) => env.CHAINS.get(env.CHAINS.idFromName(id));

/** A run of the workspace, or 404 (also for another workspace's run). */
export async function ownRun(env: Env, workspaceId: string, id: string): Promise<RunRow> {
  const r = await db(env)
    .select(RUN_COLUMNS)
    .from(schema.runs)
    .leftJoin(schema.hosts, eq(schema.hosts.id, schema.runs.hostId))
    .where(and(eq(schema.runs.id, id), eq(schema.runs.workspaceId, workspaceId)))
    .get();
  if (!r) throw notFound("run");
  return r;
}

/** One page of the workspace's runs, newest frame first, and the cursor of the next page. */
export async function listRuns(env: Env, workspaceId: string, q: RunListQuery): Promise<{ runs: RunRow[]; next: string | null }> {
  const r = schema.runs;
  const when = sql<number>`coalesce(${r.lastFrameMs}, 0)`;
  const where: SQL[] = [eq(r.workspaceId, workspaceId)];
  if (q.status) where.push(eq(r.status, q.status));
  if (q.tier) where.push(eq(r.tier, q.tier));
  if (q.grade) where.push(eq(r.grade, q.grade));
  if (q.host) where.push(eq(r.hostId, q.host));
  if (q.agent) where.push(or(eq(r.harness, q.agent), eq(r.agent, q.agent))!);
  if (q.from !== undefined) where.push(gte(when, q.from));
  if (q.to !== undefined) where.push(lte(when, q.to));
  if (q.cursor) {
    const [ms, id] = q.cursor.split(":") as [string, string];
    where.push(or(lt(when, Number(ms)), and(eq(when, Number(ms)), lt(r.id, id)))!);
  }
  // The computer's name comes with each row, by the host's primary key: no query per row.
  const rows = await db(env)
    .select(RUN_COLUMNS)
    .from(r)
    .leftJoin(schema.hosts, eq(schema.hosts.id, r.hostId))
    .where(and(...where))
    .orderBy(desc(when), desc(r.id))
    .limit(q.limit + 1)
    .all();
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return { runs: page, next: rows.length > q.limit && last ? `${last.lastFrameMs ?? 0}:${last.id}` : null };
}

/** A run with what only its chain knows: held frames, every gap, the coverage facts. */
export interface RunDetail {
  row: RunRow;
  paused: boolean;
  heldFrames: number;
  gaps: Gap[];
  facts: CoverageFacts | null;
  /** The run's priced calls by model (`GET /v1/spend` grouped by model for this run). */
  byModel: Awaited<ReturnType<typeof spendTotals>>;
}

/** The run's detail, read from its D1 row and its chain. */
export async function runDetail(env: Env, row: RunRow): Promise<RunDetail> {
  const [detail, byModel] = await Promise.all([
    chain(env, row.id).detail(),
    spendTotals(db(env), { workspaceId: row.workspaceId, run: row.id }, ["model"], 200),
  ]);
  return {
    row,
    byModel,
    paused: row.pausedMs !== null,
    heldFrames: detail?.summary.heldCount ?? 0,
    gaps: detail?.gaps ?? [],
    facts: detail?.facts ?? null,
  };
}

/** The API's view of a run's detail. */
export function runDetailView(d: RunDetail) {
  return {
    ...runView(d.row),
    spend: { microusd: d.row.spendMicrousd, unpriced_calls: d.row.unpricedCalls, by_model: d.byModel },
    paused: d.paused,
    held_frames: d.heldFrames,
    gaps: d.gaps,
  };
}

/** A page of the run's stored frames from seq `from`. */
export async function runFrames(env: Env, row: RunRow, from: number, limit: number) {
  return chain(env, row.id).frames(from, limit);
}

/**
 * Seals a run: its agent is stopped through policy first, then its chain is sealed with the server
 * key. Answers the sealed row and how far the stop reached its computer.
 */
export async function sealRun(env: Env, row: RunRow): Promise<{ row: RunRow; propagation: Propagation }> {
  // Stop the agent first: if its host's policy cannot list it (409), the run is not sealed either.
  await setPaused(env, row, true, Date.now());
  // The chain object signs the seal with the current key: make sure it is on record first.
  await signingKey(env);
  const summary = await chain(env, row.id).seal(Date.now());
  await syncRun(db(env), summary);
  const propagation = await pushHost(env, row.hostId);
  return { row: await ownRun(env, row.workspaceId, row.id), propagation };
}

/**
 * Pauses a run: its host's policy lists it, pushed to the host; the answer comes once its recorder
 * applied it (or says it has not), so its next hook is refused.
 */
export async function pauseRun(env: Env, row: RunRow): Promise<Propagation> {
  await setPaused(env, row, true, Date.now());
  return pushHost(env, row.hostId);
}

/** Resumes a paused run; a sealed run stays stopped (409). */
export async function resumeRun(env: Env, row: RunRow): Promise<Propagation> {
  // The chain, not its D1 copy, knows whether it is sealed.
  if ((await chain(env, row.id).summary())?.status === "sealed")
    throw new AppError(409, "sealed", "A sealed run stays stopped; it cannot be resumed.");
  await setPaused(env, row, false, Date.now());
  return pushHost(env, row.hostId);
}

/**
 * The answer to an export, the console's download and `GET /v1/runs/:id/export` alike: the run's
 * version-2 bundle streamed as an attachment named {@link exportFileName}, or 409 while the run
 * is live or closed by the cron.
 */
export async function exportAnswer(env: Env, row: RunRow): Promise<Response> {
  const stub = chain(env, row.id);
  const head = await stub.exportHead();
  if (!head) throw notFound("run");
  const status = head.summary.status;
  if (status === "live") throw new AppError(409, "not_exportable", "The run is live: it can be exported once it ends or is sealed.");
  if (status === "closed")
    throw new AppError(
      409,
      "not_exportable",
      "The run went quiet and was closed with outcome unknown; it can be exported once the computer ends it or an operator seals it.",
    );
  const stream = bundleStream(stub, head, await signingKey(env), Date.now());
  return new Response(stream, {
    headers: { "Content-Type": BUNDLE_V2_PAYLOAD_TYPE, "Content-Disposition": `attachment; filename="${exportFileName(row.id)}"` },
  });
}
