import type { HostRow } from "../auth/host.ts";
import type { ChainIngestResult } from "../chain/types.ts";
import { loadPolicy, workspaceObject } from "../lib/policy-store.ts";
import { pushPolicies } from "../lib/push.ts";

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
