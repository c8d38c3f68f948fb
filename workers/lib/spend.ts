import { db } from "../db/client.ts";
import { spendTotals } from "../spend/query.ts";

/** One row of a spend breakdown: the key, the runs, and their spend in millionths of a US dollar. */
export interface SpendRow {
  key: string;
  runs: number;
  microusd: number;
}

/**
 * The workspace's spend since the UTC day of `fromMs`, by day (and so the period's total), by
 * model, by harness or agent and by computer: the priced calls by the day the server received
 * each (`spendTotals`, exactly as `GET /v1/spend?group_by=…` answers), each a range of the daily
 * rollup's key over the period (a few rows a day), never a read of the runs' spend rows.
 */
export async function spendSince(env: Env, workspaceId: string, fromMs: number) {
  const from = new Date(fromMs).toISOString().slice(0, 10);
  const rows = (group: "day" | "agent" | "host" | "model", limit: number) =>
    spendTotals(db(env), { workspaceId, from }, [group], limit, group !== "model");
  const [days, agents, hosts, model] = await Promise.all([rows("day", 1000), rows("agent", 200), rows("host", 200), rows("model", 200)]);
  const keyed = (list: Awaited<ReturnType<typeof rows>>, group: string): SpendRow[] =>
    list.map((d) => ({ key: String((d as Record<string, unknown>)[group] ?? ""), runs: d.runs ?? 0, microusd: d.microusd ?? 0 }));
  const day = keyed(days, "day");
  day.sort((a, b) => (a.key < b.key ? 1 : -1));
  return { day, agent: keyed(agents, "agent"), host: keyed(hosts, "host"), model };
}
