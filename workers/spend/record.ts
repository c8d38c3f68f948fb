import { sql } from "drizzle-orm";
import type { HostRow } from "../auth/host.ts";
import type { ChainIngestResult, SpendTotal } from "../chain/types.ts";
import { type Db, schema } from "../db/client.ts";
import { loadPolicy, workspaceObject } from "../lib/policy-store.ts";
import { pushPolicies } from "../lib/push.ts";

/** The D1 statement that copies one of a chain's spend totals; an older copy never overwrites a newer one. */
export function spendUpsert(d: Db, host: HostRow, result: ChainIngestResult, t: SpendTotal) {
  const s = result.summary;
  const values = {
    runId: s.chain,
    day: t.day,
    vendor: t.vendor,
    model: t.model,
    priceVersion: t.priceVersion,
    workspaceId: host.workspaceId,
    hostId: host.id,
    agent: s.kind === "run" ? s.harness : null,
    calls: t.calls,
    unpricedCalls: t.unpricedCalls,
    microusd: t.microusd,
    inputTokens: t.inputTokens,
    outputTokens: t.outputTokens,
    cacheReadTokens: t.cacheReadTokens,
    cacheWriteTokens: t.cacheWriteTokens,
    version: s.version,
  };
  const { runId: _r, day: _d, vendor: _v, model: _m, priceVersion: _p, ...set } = values;
  return d
    .insert(schema.spend)
    .values(values)
    .onConflictDoUpdate({
      target: [schema.spend.runId, schema.spend.day, schema.spend.vendor, schema.spend.model, schema.spend.priceVersion],
      set,
      setWhere: sql`excluded.version > ${schema.spend.version}`,
    });
}

/**
 * Hands the batch's new spend to the workspace's budget counters (its one writer). When that
 * exhausts a budget scope, or frees one, every connected recorder of the workspace is told, and the
 * answer waits (bounded) until they applied it: once the batch that spent a budget is answered,
 * the next step on every connected computer is refused. Runs after the batch is stored; a failure
 * here is logged and mended by the next batch of the run, which reports the run's whole day total again.
 */
export async function countSpend(env: Env, host: HostRow, results: ChainIngestResult[], now: number): Promise<void> {
  const rows = results.flatMap((r) =>
    r.spendDays.map((s) => ({ runId: r.summary.chain, hostId: host.id, day: s.day, microusd: s.microusd })),
  );
  if (rows.length === 0) return;
  try {
    const { policy } = await loadPolicy(env, host.workspaceId);
    const { changed } = await workspaceObject(env, host.workspaceId).report(rows, policy.budgets, now);
    if (changed) await pushPolicies(env, host.workspaceId);
  } catch (err) {
    console.error("budget count failed", host.workspaceId, err);
  }
}
