import { and, eq, gt, inArray, isNotNull, isNull, lt, lte, or, sql } from "drizzle-orm";
import { db, schema } from "./db/client.ts";
import { PENDING_DEGRADED_MS } from "./lib/health.ts";
import { sweepArchive } from "./archive.ts";
import { QUIET_MS } from "./lib/quiet.ts";
import { checkToolDefinitions } from "./tools/drift.ts";

/** Runs the backstop sweep hands to their objects per invocation. */
export const CLOSE_BATCH = 50;
/** How long past the quiet close the backstop waits: a run's own alarm closes it first. */
const BACKSTOP_MS = 60 * 60_000;

/**
 * The backstop of the quiet-run close: each run's object closes it by its own alarm 12 hours
 * after its last frame (`chain-object.ts`); an object written before it had an alarm has none
 * until its next call. This hands those objects (rows still live an hour past the quiet close) a
 * close, which also sets their alarm. Bounded and served by the `runs_cron` index; it finds
 * nothing once every object has its alarm.
 */
export async function closeQuietRuns(env: Env, now: number): Promise<number> {
  const quiet = await db(env)
    .select({ id: schema.runs.id })
    .from(schema.runs)
    .where(and(eq(schema.runs.status, "live"), lt(schema.runs.lastReceivedMs, now - QUIET_MS - BACKSTOP_MS)))
    .orderBy(schema.runs.lastReceivedMs)
    .limit(CLOSE_BATCH)
    .all();
  // One unreachable chain must not keep the others from being closed; each sends its own row.
  const settled = await Promise.allSettled(quiet.map((r) => env.CHAINS.get(env.CHAINS.idFromName(r.id)).close(now, QUIET_MS)));
  return settled.filter((s) => s.status === "fulfilled" && s.value?.status === "closed").length;
}

/**
 * Marks agents (and their hosts) whose data has been pending over 10 minutes as degraded; clears
 * hosts that recovered. Every statement is a range of an index (`agents_pending`,
 * `agents_degraded`, `hosts_degraded`): the degraded ones, never every agent or host.
 */
export async function markDegraded(env: Env, now: number): Promise<void> {
  const d = db(env);
  const a = schema.agents;
  const h = schema.hosts;
  const cutoff = now - PENDING_DEGRADED_MS;
  await d.batch([
    d
      .update(a)
      .set({ degradedMs: now })
      .where(and(gt(a.pendingSinceMs, 0), lt(a.pendingSinceMs, cutoff), isNull(a.degradedMs))),
    d
      .update(h)
      .set({ degradedMs: now })
      .where(and(inArray(h.id, d.select({ id: a.hostId }).from(a).where(gt(a.degradedMs, 0))), isNull(h.degradedMs))),
    d
      .update(h)
      .set({ degradedMs: null })
      .where(and(gt(h.degradedMs, 0), sql`NOT EXISTS (SELECT 1 FROM ${a} WHERE ${a.hostId} = ${h.id} AND ${a.degradedMs} > 0)`)),
  ]);
}

/** Console sessions deleted per invocation; a backlog drains over the next ones. */
export const SESSION_SWEEP_BATCH = 500;

/**
 * Deletes console sessions that can no longer sign anybody in: expired, or revoked by sign-out.
 * Answers how many it deleted.
 */
export async function sweepConsoleSessions(env: Env, now: number): Promise<number> {
  const d = db(env);
  const s = schema.consoleSessions;
  const dead = d
    .select({ id: s.id })
    .from(s)
    .where(or(lte(s.expiresMs, now), isNotNull(s.revokedMs)))
    .limit(SESSION_SWEEP_BATCH);
  const res = await d.delete(s).where(inArray(s.id, dead)).run();
  return res.meta.changes ?? 0;
}

export async function scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext): Promise<void> {
  const now = controller.scheduledTime;
  ctx.waitUntil(markDegraded(env, now));
  ctx.waitUntil(sweepConsoleSessions(env, now));
  ctx.waitUntil(checkToolDefinitions(env, now));
  ctx.waitUntil(sweepArchive(env, now));
  await closeQuietRuns(env, now);
}
