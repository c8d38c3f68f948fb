import { and, eq, inArray, isNotNull, isNull, lt, lte, or, sql } from "drizzle-orm";
import type { ChainSummary } from "./chain/types.ts";
import { db, schema } from "./db/client.ts";
import { PENDING_DEGRADED_MS } from "./lib/health.ts";
import { runRowUpsert } from "./lib/run-rows.ts";
import { checkToolDefinitions } from "./tools/drift.ts";

/** A run with no frame for this long (server clock) is closed with outcome unknown. */
export const QUIET_MS = 12 * 60 * 60_000;
/** Runs closed per invocation; the rest wait for the next one (every 5 minutes). */
export const CLOSE_BATCH = 50;

/** Closes quiet runs. Idempotent: a run the object finds not quiet (a frame just came) stays live. */
export async function closeQuietRuns(env: Env, now: number): Promise<number> {
  const d = db(env);
  const quiet = await d
    .select({ id: schema.runs.id })
    .from(schema.runs)
    .where(and(eq(schema.runs.status, "live"), lt(schema.runs.lastReceivedMs, now - QUIET_MS)))
    .orderBy(schema.runs.lastReceivedMs)
    .limit(CLOSE_BATCH)
    .all();
  // One unreachable chain must not keep the others' rows from being written.
  const settled = await Promise.allSettled(quiet.map((r) => env.CHAINS.get(env.CHAINS.idFromName(r.id)).close(now, QUIET_MS)));
  const summaries = settled.map((s) => (s.status === "fulfilled" ? s.value : null)) as (ChainSummary | null)[];
  const writes = summaries.filter((s): s is ChainSummary => s !== null).map((s) => runRowUpsert(d, s, now));
  if (writes.length > 0) await d.batch(writes as [(typeof writes)[number], ...(typeof writes)[number][]]);
  return summaries.filter((s) => s?.status === "closed").length;
}

/** Marks agents (and their hosts) whose data has been pending over 10 minutes as degraded; clears hosts that recovered. */
export async function markDegraded(env: Env, now: number): Promise<void> {
  const d = db(env);
  const cutoff = now - PENDING_DEGRADED_MS;
  await d.batch([
    d
      .update(schema.agents)
      .set({ degradedMs: now })
      .where(and(isNotNull(schema.agents.pendingSinceMs), lt(schema.agents.pendingSinceMs, cutoff), isNull(schema.agents.degradedMs))),
    d
      .update(schema.hosts)
      .set({ degradedMs: now })
      .where(
        and(
          isNull(schema.hosts.degradedMs),
          inArray(schema.hosts.id, d.select({ id: schema.agents.hostId }).from(schema.agents).where(isNotNull(schema.agents.degradedMs))),
        ),
      ),
    d
      .update(schema.hosts)
      .set({ degradedMs: null })
      .where(
        and(
          isNotNull(schema.hosts.degradedMs),
          sql`NOT EXISTS (SELECT 1 FROM ${schema.agents} WHERE ${schema.agents.hostId} = ${schema.hosts.id} AND ${schema.agents.degradedMs} IS NOT NULL)`,
        ),
      ),
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
  await closeQuietRuns(env, now);
}
