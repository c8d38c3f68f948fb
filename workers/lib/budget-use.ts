import type { ClauseUse, UseFilter } from "../workspace/budgets.ts";
import { loadPolicy, workspaceObject } from "./policy-store.ts";

/** Each budget clause's use in its current window, as `GET /v1/spend/budgets` answers it. */
export interface BudgetUse {
  now_ms: number;
  clauses: ClauseUse[];
}

/**
 * The workspace's budget clauses against the counters that enforce them (the workspace's Durable
 * Object: priced spend plus unexpired leases). The API route and the console both read this.
 */
export async function budgetUseOf(env: Env, workspaceId: string, filter: UseFilter, now = Date.now()): Promise<BudgetUse> {
  const { policy } = await loadPolicy(env, workspaceId);
  const clauses = policy.budgets.length === 0 ? [] : await workspaceObject(env, workspaceId).use(policy.budgets, now, filter);
  return { now_ms: now, clauses };
}
