import { and, desc, eq, gte, isNotNull, isNull, lt, lte, ne, or, type SQL } from "drizzle-orm";
import { z } from "zod";
import { BUNDLE_V2_PAYLOAD_TYPE, type CoverageFacts, exportFileName, type Gap, GRADES, TIERS } from "../../protocol/index.ts";
import { archivedRun } from "../archive.ts";
import { db, schema } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { signingKey } from "../keys.ts";
import { bundleStream } from "./export-stream.ts";
import { setPaused } from "./host-policy.ts";
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

/**
 * A run of the workspace, or 404 (also for another workspace's run). A run whose rows went to the
 * archive (`archive.ts`) is read from there by its id: its record is still in its ChainObject.
 */
export async function ownRun(env: Env, workspaceId: string, id: string): Promise<RunRow> {
  const r = await db(env)
    .select(RUN_COLUMNS)
    .from(schema.runs)
    .leftJoin(schema.hosts, eq(schema.hosts.id, schema.runs.hostId))
    .where(and(eq(schema.runs.id, id), eq(schema.runs.workspaceId, workspaceId)))
    .get();
  if (r) return r;
  const archived = await archivedRun(env, workspaceId, id);
  if (!archived) throw notFound("run");
  return archived.run;
}

/**
 * One page of the workspace's runs, newest frame first (a run with no frame yet last), and the
 * cursor of the next page. Each query is one range of an index (workspace, [filter], last frame,
 * id) read in its order, so a page costs the same at 100 runs and at 10 million: the rows with a
 * frame first, then, when the page is not full, those without; the agent filter (the harness
 * label or the agent) reads its two indexes and merges them.
 */
export async function listRuns(env: Env, workspaceId: string, q: RunListQuery): Promise<{ runs: RunRow[]; next: string | null }> {
  const r = schema.runs;
  const base: SQL[] = [eq(r.workspaceId, workspaceId)];
  if (q.status) base.push(eq(r.status, q.status));
  if (q.tier) base.push(eq(r.tier, q.tier));
  if (q.grade) base.push(eq(r.grade, q.grade));
  if (q.host) base.push(eq(r.hostId, q.host));
  const [cursorMs, cursorId] = q.cursor ? (q.cursor.split(":") as [string, string]) : [null, null];
  const want = q.limit + 1;
  const page = async (filter: SQL[]) => {
    const rows: RunRow[] = [];
    // Runs with a frame: in (last frame, id) order, below the cursor.
    if (cursorMs === null || Number(cursorMs) > 0) {
      const where = [...filter, isNotNull(r.lastFrameMs)];
      if (q.from !== undefined) where.push(gte(r.lastFrameMs, q.from));
      if (q.to !== undefined) where.push(lte(r.lastFrameMs, q.to));
      if (cursorMs !== null)
        where.push(or(lt(r.lastFrameMs, Number(cursorMs)), and(eq(r.lastFrameMs, Number(cursorMs)), lt(r.id, cursorId!)))!);
      rows.push(...(await select(env, where, [desc(r.lastFrameMs), desc(r.id)], want)));
    }
    // Then those with none yet (their last frame counts as 0).
    if (rows.length < want && (q.from === undefined || q.from <= 0)) {
      const where = [...filter, isNull(r.lastFrameMs)];
      if (cursorMs !== null && Number(cursorMs) === 0) where.push(lt(r.id, cursorId!));
      rows.push(...(await select(env, where, [desc(r.id)], want - rows.length)));
    }
    return rows;
  };
  const rows = q.agent
    ? mergeNewest(
        await Promise.all([page([...base, eq(r.harness, q.agent)]), page([...base, eq(r.agent, q.agent), ne(r.harness, q.agent)])]),
      )
    : await page(base);
  const shown = rows.slice(0, q.limit);
  const last = shown.at(-1);
  return { runs: shown, next: rows.length > q.limit && last ? `${last.lastFrameMs ?? 0}:${last.id}` : null };
}

// The computer's name comes with each row, by the host's primary key: no query per row.
function select(env: Env, where: SQL[], order: SQL[], limit: number): Promise<RunRow[]> {
  return db(env)
    .select(RUN_COLUMNS)
    .from(schema.runs)
    .leftJoin(schema.hosts, eq(schema.hosts.id, schema.runs.hostId))
    .where(and(...where))
    .orderBy(...order)
    .limit(limit)
    .all();
}

/** Two pages in the list's order merged into one, in that order. */
function mergeNewest(pages: RunRow[][]): RunRow[] {
  const key = (x: RunRow) => [x.lastFrameMs ?? 0, x.id] as const;
  return pages.flat().sort((a, b) => {
    const [am, ai] = key(a);
    const [bm, bi] = key(b);
    return bm - am || (bi < ai ? -1 : bi > ai ? 1 : 0);
  });
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
