import { and, asc, eq, gt, inArray, ne, type SQL } from "drizzle-orm";
import { z } from "zod";
import { HARNESSES } from "../../protocol/index.ts";
import type { HostRow } from "../auth/host.ts";
import { db, schema } from "../db/client.ts";
import { agentHealth, agentKind } from "./health.ts";

/** A page of a workspace's hosts: at most `limit`, after the host id `cursor` (the API's query and the console's). */
export const HostPageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: z.string().min(1).max(64).optional(),
});
/** One of {@link HostPageQuery}. */
export type HostPageQuery = z.output<typeof HostPageQuery>;

/**
 * One page of the workspace's hosts in id order, and the cursor of the next: one range of the
 * `hosts_workspace` index, whatever the fleet's size. `enrolled` leaves out removed computers.
 */
export async function hostsPage(
  env: Env,
  workspaceId: string,
  q: HostPageQuery,
  opts: { enrolled?: boolean } = {},
): Promise<{ hosts: HostRow[]; next: string | null }> {
  const h = schema.hosts;
  const where: SQL[] = [eq(h.workspaceId, workspaceId)];
  if (q.cursor) where.push(gt(h.id, q.cursor));
  if (opts.enrolled) where.push(ne(h.status, "unenrolled"));
  const rows = await db(env)
    .select()
    .from(h)
    .where(and(...where))
    .orderBy(asc(h.id))
    .limit(q.limit + 1)
    .all();
  const page = rows.slice(0, q.limit);
  return { hosts: page, next: rows.length > q.limit ? page.at(-1)!.id : null };
}

/** One agent as the Wrapped agents panel and `GET /v1/agents` show it. */
export interface AgentView {
  host_id: string;
  name: string;
  kind: "harness" | "custom";
  health: string;
  reason: string;
  first_seen_ms: number | null;
  last_seen_ms: number | null;
  last_delivered_ms: number | null;
  pending_since_ms: number | null;
}

/**
 * Each host's agents with health, every built-in harness (not wrapped when never named) and every
 * agent seen, for a page of hosts: one query for the page (the agents' primary key, by host).
 */
export async function agentsOfHosts(env: Env, hosts: HostRow[], now: number): Promise<AgentView[]> {
  if (hosts.length === 0) return [];
  const rows = await db(env)
    .select()
    .from(schema.agents)
    .where(
      inArray(
        schema.agents.hostId,
        hosts.map((h) => h.id),
      ),
    )
    .all();
  return hosts.flatMap((host) => {
    const mine = rows.filter((r) => r.hostId === host.id);
    const byName = new Map(mine.map((r) => [r.name, r]));
    const names = [...new Set([...HARNESSES, ...mine.map((r) => r.name)])];
    return names.map((name) => {
      const row = byName.get(name) ?? null;
      const health = agentHealth(row, host, now);
      return {
        host_id: host.id,
        name,
        kind: row?.kind ?? agentKind(name),
        health: health.state,
        reason: health.reason,
        first_seen_ms: row?.firstSeenMs ?? null,
        last_seen_ms: row?.lastSeenMs ?? null,
        last_delivered_ms: row?.lastDeliveredMs ?? null,
        pending_since_ms: row?.pendingSinceMs ?? null,
      };
    });
  });
}
