import { and, desc, eq, gte, lte, or, lt, sql, type SQL } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { BUNDLE_V2_PAYLOAD_TYPE, GRADES, RunId, TIERS } from "../../protocol/index.ts";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db, schema } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { signingKey } from "../keys.ts";
import { bundleStream } from "../lib/export-stream.ts";
import { setPaused } from "../lib/policy-store.ts";
import { pushHost } from "../lib/push.ts";
import { type RunRow, runView, syncRun } from "../lib/run-rows.ts";
import { spendTotals } from "../spend/query.ts";
import { valid } from "../validate.ts";

const STATUSES = ["live", "ended", "crashed", "closed", "sealed"] as const;
const int = z.coerce.number().int().nonnegative();
const ListQuery = z.strictObject({
  status: z.enum(STATUSES).optional(),
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
const IdParam = z.object({ id: RunId });
const FramesQuery = z.strictObject({ from: int.default(0), limit: z.coerce.number().int().min(1).max(1000).default(100) });

async function ownRun(env: Env, workspaceId: string, id: string): Promise<RunRow> {
  const r = await db(env)
    .select()
    .from(schema.runs)
    .where(and(eq(schema.runs.id, id), eq(schema.runs.workspaceId, workspaceId)))
    .get();
  if (!r) throw notFound("run");
  return r;
}

const chain = (env: Env, id: string) => env.CHAINS.get(env.CHAINS.idFromName(id));

export const runs = new Hono<OperatorEnv>()
  .use("/v1/runs", operatorAuth)
  .use("/v1/runs/*", operatorAuth)
  .get("/v1/runs", valid("query", ListQuery), async (c) => {
    const q = c.req.valid("query");
    const r = schema.runs;
    const when = sql<number>`coalesce(${r.lastFrameMs}, 0)`;
    const where: SQL[] = [eq(r.workspaceId, c.var.workspaceId)];
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
    const rows = await db(c.env)
      .select()
      .from(r)
      .where(and(...where))
      .orderBy(desc(when), desc(r.id))
      .limit(q.limit + 1)
      .all();
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return c.json({ runs: page.map(runView), next: rows.length > q.limit && last ? `${last.lastFrameMs ?? 0}:${last.id}` : null });
  })
  .get("/v1/runs/:id", valid("param", IdParam), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    const detail = await chain(c.env, row.id).detail();
    const byModel = await spendTotals(db(c.env), { workspaceId: c.var.workspaceId, run: row.id }, ["model"], 200);
    return c.json({
      ...runView(row),
      spend: { microusd: row.spendMicrousd, unpriced_calls: row.unpricedCalls, by_model: byModel },
      paused: row.pausedMs !== null,
      held_frames: detail?.summary.heldCount ?? 0,
      gaps: detail?.gaps ?? [],
    });
  })
  .get("/v1/runs/:id/frames", valid("param", IdParam), valid("query", FramesQuery), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    const q = c.req.valid("query");
    return c.json(await chain(c.env, row.id).frames(q.from, q.limit));
  })
  .post("/v1/runs/:id/seal", valid("param", IdParam), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    // Stop the agent first: if its host's policy cannot list it (409), the run is not sealed either.
    await setPaused(c.env, row, true, Date.now());
    // The chain object signs the seal with the current key: make sure it is on record first.
    await signingKey(c.env);
    const summary = await chain(c.env, row.id).seal(Date.now());
    await syncRun(db(c.env), summary);
    await pushHost(c.env, row.hostId);
    return c.json(runView(await ownRun(c.env, c.var.workspaceId, row.id)));
  })
  .post("/v1/runs/:id/pause", valid("param", IdParam), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    await setPaused(c.env, row, true, Date.now());
    await pushHost(c.env, row.hostId);
    return c.json({ id: row.id, paused: true });
  })
  .post("/v1/runs/:id/resume", valid("param", IdParam), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    // The chain, not its D1 copy, knows whether it is sealed.
    if ((await chain(c.env, row.id).summary())?.status === "sealed")
      throw new AppError(409, "sealed", "A sealed run stays stopped; it cannot be resumed.");
    await setPaused(c.env, row, false, Date.now());
    await pushHost(c.env, row.hostId);
    return c.json({ id: row.id, paused: false });
  })
  .get("/v1/runs/:id/export", valid("param", IdParam), async (c) => {
    const row = await ownRun(c.env, c.var.workspaceId, c.req.valid("param").id);
    const stub = chain(c.env, row.id);
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
    c.header("Content-Disposition", `attachment; filename="${row.id}.oxagen.jsonl"`);
    return c.body(bundleStream(stub, head, await signingKey(c.env), Date.now()), 200, { "Content-Type": BUNDLE_V2_PAYLOAD_TYPE });
  });
