import { and, eq, ne, sql } from "drizzle-orm";
import { db, schema } from "../db/client.ts";
import type { Announced } from "../workspace/push-hub.ts";
import { hostPolicyPayload } from "./host-policy.ts";
import { announce } from "./hubs.ts";
import { workspaceObject } from "./policy-store.ts";

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

/** The hosts a change concerns that had not applied it: counted, and at most {@link MAX_NAMED} named. */
interface Missing {
  hosts: number;
  named: NotApplied[];
  count: number;
}

function propagation(m: Missing): Propagation {
  return { hosts: m.hosts, applied: m.hosts - m.count, not_applied: m.named.slice(0, MAX_NAMED), more: Math.max(0, m.count - MAX_NAMED) };
}

/**
 * Of the workspace's enrolled computers, those the announcement did not reach or that did not
 * acknowledge it: counted in D1 by the index of the workspace's hosts, and at most
 * {@link MAX_NAMED} of each kind named (two bounded reads, the connected and slow hosts passed as
 * one JSON parameter each): no statement per host.
 */
async function missingOf(env: Env, workspaceId: string, announced: Announced | null): Promise<Missing> {
  const h = schema.hosts;
  const d = db(env);
  const enrolled = and(eq(h.workspaceId, workspaceId), ne(h.status, "unenrolled"));
  const connected = JSON.stringify(announced?.connected ?? []);
  const slow = JSON.stringify(announced?.slow ?? []);
  const [[total], [reached], offline, late] = await d.batch([
    d.select({ n: sql<number>`count(*)` }).from(h).where(enrolled),
    d
      .select({ n: sql<number>`count(*)` })
      .from(h)
      .where(and(enrolled, sql`${h.id} IN (SELECT value FROM json_each(${connected}))`)),
    d
      .select({ id: h.id, hostname: h.hostname })
      .from(h)
      .where(and(enrolled, sql`${h.id} NOT IN (SELECT value FROM json_each(${connected}))`))
      .orderBy(h.id)
      .limit(MAX_NAMED),
    d
      .select({ id: h.id, hostname: h.hostname })
      .from(h)
      .where(and(enrolled, sql`${h.id} IN (SELECT value FROM json_each(${slow}))`))
      .orderBy(h.id)
      .limit(MAX_NAMED),
  ]);
  const why = announced === null ? "push_failed" : "offline";
  const named: NotApplied[] = [
    ...offline.map((x) => ({ host_id: x.id, hostname: x.hostname, why: why as NotApplied["why"] })),
    ...late.map((x) => ({ host_id: x.id, hostname: x.hostname, why: "slow" as const })),
  ];
  const slowCount = new Set(announced?.slow ?? []).size;
  return { hosts: total?.n ?? 0, named, count: (total?.n ?? 0) - (reached?.n ?? 0) + slowCount };
}

/**
 * Tells every connected recorder of the workspace that its policy changed (one announcement, sent
 * by each of the workspace's hubs with each host's signed policy made there from the workspace's
 * part, `workspace/push-hub.ts`, or `etag: "*"` for a recorder to fetch its own), waits
 * for their acknowledgements (at most `waitMs`), and answers how far the change reached. A push
 * that fails is logged, never the operator's error: the change is stored, and a recorder that
 * missed the push learns it on its next poll. One call per hub, and bounded D1 reads, whatever
 * the fleet's size.
 */
export async function pushPolicies(env: Env, workspaceId: string, waitMs = pushWaitMs(env)): Promise<Propagation> {
  // Without the workspace's part the hubs still announce, with `*`: every recorder fetches.
  const part = await workspaceObject(env, workspaceId)
    .pushPart(Date.now())
    .catch((err: unknown) => console.error("push part not read", workspaceId, err));
  const announced = await announce(env, workspaceId, "all", waitMs, part ?? undefined).catch((err: unknown) => {
    console.error("policy push failed", workspaceId, err);
    return null;
  });
  return propagation(await missingOf(env, workspaceId, announced));
}

/** Pushes one host its new policy's ETag (re-read, so a status just written is what it is handed) and waits for its recorder. */
export async function pushHost(env: Env, hostId: string, waitMs = pushWaitMs(env)): Promise<Propagation> {
  const host = await db(env).select().from(schema.hosts).where(eq(schema.hosts.id, hostId)).get();
  if (!host) return propagation({ hosts: 0, named: [], count: 0 });
  let announced: Announced | null = null;
  try {
    const { etag, sign } = await hostPolicyPayload(env, host, Date.now());
    announced = await announce(env, host.workspaceId, [{ host: host.id, etag, policy: await sign() }], waitMs);
  } catch (err) {
    console.error("policy push failed", host.workspaceId, host.id, err);
  }
  if (host.status === "unenrolled") return propagation({ hosts: 0, named: [], count: 0 });
  const why =
    announced === null
      ? "push_failed"
      : !announced.connected.includes(host.id)
        ? "offline"
        : announced.slow.includes(host.id)
          ? "slow"
          : null;
  return propagation({ hosts: 1, named: why ? [{ host_id: host.id, hostname: host.hostname, why }] : [], count: why ? 1 : 0 });
}
