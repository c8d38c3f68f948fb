import type { ClauseUse, UseFilter } from "../workspace/budgets.ts";
import { workspaceObject } from "./policy-store.ts";

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
  return { now_ms: now, clauses: await workspaceObject(env, workspaceId).use(now, filter) };
}
