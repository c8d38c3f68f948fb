import { eq } from "drizzle-orm";
import type { HostRow } from "../auth/host.ts";
import { db, schema } from "../db/client.ts";
import type { Announced } from "../workspace/push-hub.ts";
import { hostPolicyPayload, workspaceObject } from "./policy-store.ts";

/** How long an operator's change waits for the recorders' acknowledgements when `OXAGEN_PUSH_WAIT_MS` does not say. */
const DEFAULT_WAIT_MS = 5000;
/** The most computers a propagation names; the rest are counted in `more`. */
const MAX_NAMED = 100;

/** A computer that had not applied a change when the answer was given, and why. */
export interface NotApplied {
  host_id: string;
  hostname: string;
  /**
   * `offline`: no push connection (it fetches the policy when it reconnects, then every 30 s until
   * it does); `slow`: connected, but its recorder did not acknowledge within the wait; `push_failed`:
   * the announcement could not be sent (it learns the change at its next poll).
   */
  why: "offline" | "slow" | "push_failed";
}

/**
 * How far a policy change had reached when the operator's call answered: of the computers it
 * concerns (enrolled, not unenrolled), how many recorders fetched, verified and applied it, and
 * which did not (offline or slow). Once `not_applied` is empty, the next step on any of them is
 * decided by the new policy.
 */
export interface Propagation {
  hosts: number;
  applied: number;
  not_applied: NotApplied[];
  /** Computers not applied beyond the ones named. */
  more: number;
}

/** How long changes wait for acknowledgements (`OXAGEN_PUSH_WAIT_MS`, milliseconds). */
export function pushWaitMs(env: Env): number {
  const ms = Number(env.OXAGEN_PUSH_WAIT_MS);
  return Number.isFinite(ms) && ms >= 0 ? ms : DEFAULT_WAIT_MS;
}

type Target = Pick<HostRow, "id" | "hostname" | "status">;

function propagation(hosts: Target[], announced: Announced | null): Propagation {
  const live = hosts.filter((h) => h.status !== "unenrolled");
  const connected = new Set(announced?.connected ?? []);
  const slow = new Set(announced?.slow ?? []);
  const missing: NotApplied[] = [];
  for (const h of live) {
    const why = announced === null ? "push_failed" : !connected.has(h.id) ? "offline" : slow.has(h.id) ? "slow" : null;
    if (why) missing.push({ host_id: h.id, hostname: h.hostname, why });
  }
  return {
    hosts: live.length,
    applied: live.length - missing.length,
    not_applied: missing.slice(0, MAX_NAMED),
    more: Math.max(0, missing.length - MAX_NAMED),
  };
}

/**
 * Tells every connected recorder of the workspace that its policy changed (one announcement,
 * `etag: "*"`: each recorder fetches its own policy), waits for their acknowledgements (at most
 * `waitMs`), and answers how far the change reached. A push that fails is logged, never the
 * operator's error: the change is stored, and a recorder that missed the push learns it on its
 * next poll.
 */
export async function pushPolicies(env: Env, workspaceId: string, waitMs = pushWaitMs(env)): Promise<Propagation> {
  const hosts = db(env)
    .select({ id: schema.hosts.id, hostname: schema.hosts.hostname, status: schema.hosts.status })
    .from(schema.hosts)
    .where(eq(schema.hosts.workspaceId, workspaceId))
    .all();
  const announced = await workspaceObject(env, workspaceId)
    .announce("all", waitMs)
    .catch((err: unknown) => {
      console.error("policy push failed", workspaceId, err);
      return null;
    });
  return propagation(await hosts, announced);
}

/** Pushes one host its new policy's ETag (re-read, so a status just written is what it is handed) and waits for its recorder. */
export async function pushHost(env: Env, hostId: string, waitMs = pushWaitMs(env)): Promise<Propagation> {
  const host = await db(env).select().from(schema.hosts).where(eq(schema.hosts.id, hostId)).get();
  if (!host) return propagation([], null);
  let announced: Announced | null = null;
  try {
    const hub = workspaceObject(env, host.workspaceId);
    const { etag } = await hostPolicyPayload(env, host, Date.now());
    announced = await hub.announce([{ host: host.id, etag }], waitMs);
  } catch (err) {
    console.error("policy push failed", host.workspaceId, host.id, err);
  }
  return propagation([host], announced);
}
