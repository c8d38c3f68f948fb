import { and, eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { HostKeyRotation, HostReport, ROUTES } from "../../protocol/index.ts";
import { type HostEnv, type HostRow, hostAuth, hostChanged, hostObject } from "../auth/host.ts";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db, schema } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { agentsOfHosts, HostPageQuery, hostsPage } from "../lib/fleet-pages.ts";
import { agentKind } from "../lib/health.ts";
import { keysView, rotateHostKey, unenrollHost } from "../lib/host-keys.ts";
import { type HostPart, hostPolicyPayload, touchHostPolicy } from "../lib/host-policy.ts";
import { pushHost } from "../lib/push.ts";
import { throwIfOver } from "../lib/quotas.ts";
import { valid } from "../validate.ts";

const IdParam = z.object({ id: z.string().min(1).max(64) });

/** A host as the operator API shows it. */
export function hostView(h: HostRow) {
  return {
    id: h.id,
    hostname: h.hostname,
    key_id: h.keyId,
    public_key: h.publicKey,
    status: h.status,
    enrolled_ms: h.enrolledMs,
    last_seen_ms: h.lastSeenMs,
    degraded_ms: h.degradedMs,
    unenrolled_ms: h.unenrolledMs,
    keys: keysView(h),
  };
}

/** The host's agents with health (see `lib/fleet-pages.ts`). */
export function agentsOf(env: Env, host: HostRow, now: number) {
  return agentsOfHosts(env, [host], now);
}

/** A host of the workspace, or 404. */
export async function ownHost(env: Env, workspaceId: string, id: string): Promise<HostRow> {
  const h = await db(env)
    .select()
    .from(schema.hosts)
    .where(and(eq(schema.hosts.id, id), eq(schema.hosts.workspaceId, workspaceId)))
    .get();
  if (!h) throw notFound("host");
  return h;
}

/** Suspends or resumes a host: its next policy says so, and the server refuses its data while suspended. */
export async function setSuspended(env: Env, host: HostRow, suspended: boolean) {
  if (host.status === "unenrolled") throw new AppError(409, "unenrolled", "The host is unenrolled; it would have to enroll again.");
  const d = db(env);
  const status = suspended ? "suspended" : "active";
  await d.batch([d.update(schema.hosts).set({ status }).where(eq(schema.hosts.id, host.id)), touchHostPolicy(d, host.id, Date.now())]);
  await hostChanged(env, host.id);
  // A suspended host keeps the push connection it holds: that is how it hears of its resumption at once.
  const propagation = await pushHost(env, host.id);
  return { ...hostView(host), status, propagation };
}

async function hostStatus(env: Env, host: HostRow, part?: HostPart) {
  const { etag } = await hostPolicyPayload(env, host, Date.now(), part);
  const agents = (await agentsOf(env, host, Date.now())).map((a) => ({ name: a.name, health: a.health, reason: a.reason }));
  return { host_id: host.id, workspace: host.workspaceId, status: host.status, policy_etag: etag, agents };
}

/** Collector-facing: its own status, and its report of pending data and hooks. */
export const hostSelf = new Hono<HostEnv>()
  .get(ROUTES.hostStatus, hostAuth({ policyPart: true }), async (c) => c.json(await hostStatus(c.env, c.var.host, c.var.hostPart)))
  .post(ROUTES.hostStatus, hostAuth(), valid("json", HostReport, { what: "host report", empty: "refused" }), async (c) => {
    const host = c.var.host;
    const report = c.req.valid("json");
    const d = db(c.env);
    const now = Date.now();
    const names = report.agents.map((a, i) => ({ name: a.name, at: `agents[${i}]` }));
    throwIfOver(await hostObject(c.env, host.id).admit({ runs: [], names }, now));
    const writes = report.agents.map((a) => {
      const pendingSince = a.pending_frames > 0 ? Math.min(a.oldest_pending_ms ?? now, now) : null;
      return d
        .insert(schema.agents)
        .values({
          hostId: host.id,
          name: a.name,
          workspaceId: host.workspaceId,
          kind: agentKind(a.name),
          wrappedMs: now,
          createdMs: now,
          pendingSinceMs: pendingSince,
          hooksMissing: a.hooks_ok ? 0 : 1,
        })
        .onConflictDoUpdate({
          target: [schema.agents.hostId, schema.agents.name],
          set: { pendingSinceMs: pendingSince, hooksMissing: a.hooks_ok ? 0 : 1, ...(pendingSince === null ? { degradedMs: null } : {}) },
        });
    });
    if (writes.length > 0) await d.batch(writes as [(typeof writes)[number], ...(typeof writes)[number][]]);
    return c.json(await hostStatus(c.env, host));
  });

/** Collector-facing: the host's own key rotation and unenrollment (which a suspended host may still ask for). */
export const hostLifecycle = new Hono<HostEnv>()
  .post(ROUTES.hostKey, hostAuth(), valid("json", HostKeyRotation, { what: "key rotation", empty: "refused" }), async (c) =>
    c.json(await rotateHostKey(c.env, c.var.host, c.req.valid("json"), Date.now())),
  )
  .delete(ROUTES.hostStatus, hostAuth({ suspended: "allowed" }), async (c) => c.json(await unenrollHost(c.env, c.var.host, Date.now())));

/** Collector-facing: whether the server already holds one of this host's runs (backfill asks first). */
export const hostRuns = new Hono<HostEnv>().get(ROUTES.hostRun.pattern, hostAuth(), valid("param", IdParam), async (c) => {
  const row = await db(c.env)
    .select({ id: schema.runs.id, status: schema.runs.status, frameCount: schema.runs.frameCount })
    .from(schema.runs)
    .where(and(eq(schema.runs.id, c.req.valid("param").id), eq(schema.runs.hostId, c.var.host.id)))
    .get();
  if (!row) throw notFound("run");
  return c.json({ id: row.id, status: row.status, frame_count: row.frameCount });
});

export const hosts = new Hono<OperatorEnv>()
  .use("/v1/hosts", operatorAuth)
  .use("/v1/hosts/*", operatorAuth)
  .get("/v1/hosts", valid("query", HostPageQuery), async (c) => {
    const page = await hostsPage(c.env, c.var.workspaceId, c.req.valid("query"));
    return c.json({ hosts: page.hosts.map(hostView), next: page.next });
  })
  .get("/v1/hosts/:id", valid("param", IdParam), async (c) =>
    c.json(hostView(await ownHost(c.env, c.var.workspaceId, c.req.valid("param").id))),
  )
  .post("/v1/hosts/:id/suspend", valid("param", IdParam), async (c) =>
    c.json(await setSuspended(c.env, await ownHost(c.env, c.var.workspaceId, c.req.valid("param").id), true)),
  )
  .post("/v1/hosts/:id/resume", valid("param", IdParam), async (c) =>
    c.json(await setSuspended(c.env, await ownHost(c.env, c.var.workspaceId, c.req.valid("param").id), false)),
  )
  .delete("/v1/hosts/:id", valid("param", IdParam), async (c) =>
    c.json(await unenrollHost(c.env, await ownHost(c.env, c.var.workspaceId, c.req.valid("param").id), Date.now())),
  );
