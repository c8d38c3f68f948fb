import type { HostRow } from "../auth/host.ts";
import type { ChainIngestResult } from "../chain/types.ts";
import { workspaceObject } from "../lib/policy-store.ts";

/**
 * Hands the batch's new spend to the workspace's budget counters (its one writer), which hold the
 * clauses themselves: no D1 statement. When that exhausts a budget scope, or frees one, the
 * workspace's object tells every connected recorder itself, after this answer. Runs after the
 * batch is stored; a failure here is logged and mended by the next batch of the run, which
 * reports the run's whole day total again.
 */
export async function countSpend(env: Env, host: HostRow, results: ChainIngestResult[], now: number): Promise<void> {
  const rows = results.flatMap((r) =>
    r.spendDays.map((s) => ({ runId: r.summary.chain, hostId: host.id, day: s.day, microusd: s.microusd })),
  );
  if (rows.length === 0) return;
  try {
    await workspaceObject(env, host.workspaceId).report(rows, now);
  } catch (err) {
    console.error("budget count failed", host.workspaceId, err);
  }
}
