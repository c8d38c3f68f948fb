import { and, eq, inArray, sql } from "drizzle-orm";
import {
  defaultPolicy,
  MAX_EXHAUSTED_BUDGETS,
  MAX_PAUSED_AGENTS,
  MAX_PAUSED_RUNS_PER_HOST,
  Policy,
  policyEtag,
  policyPayload,
  type SignedPolicy,
  signPolicy,
} from "../../protocol/index.ts";
import type { HostRow } from "../auth/host.ts";
import { QUIET_MS } from "../cron.ts";
import { type Db, db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { signingKey } from "../keys.ts";
import type { RunRow } from "./run-rows.ts";

/**
 * The largest workspace policy payload: half of what a collector accepts
 * (protocol `MAX_POLICY_BYTES`), so a host's own pause state always fits beside it.
 */
export const MAX_WORKSPACE_POLICY_BYTES = 512 * 1024;

/** The workspace's clauses, as stored: no host's pause state is ever part of it. */
function workspacePart(p: Policy): Policy {
  const { host: _host, paused_agents: _a, exhausted_budgets: _b, ...rest } = p;
  return { ...rest, paused_runs: [], suspended_hosts: [] };
}

/** The workspace's policy (its clauses) and its row version, creating the default one on first use. */
export async function loadPolicy(env: Env, workspaceId: string): Promise<{ policy: Policy; version: number }> {
  const d = db(env);
  const row = await d.select().from(schema.policies).where(eq(schema.policies.workspaceId, workspaceId)).get();
  if (row) return { policy: Policy.parse(JSON.parse(row.payload)), version: row.version };
  const ws = await d.select().from(schema.workspaces).where(eq(schema.workspaces.id, workspaceId)).get();
  if (!ws) throw new AppError(404, "not_found", "No such workspace.");
  const now = Date.now();
  const policy: Policy = {
    ...defaultPolicy(workspaceId, now),
    mode: ws.mode,
    retention: { mode: ws.retentionMode, keep: parseRoles(ws.retentionKeep) },
  };
  const payload = policyPayload(policy);
  await d
    .insert(schema.policies)
    .values({ workspaceId, payload, etag: policyEtag({ payload }), version: 1, updatedMs: now })
    .onConflictDoNothing();
  return loadPolicy(env, workspaceId);
}

/**
 * Replaces the workspace's clauses through `change`, optimistically: the write applies only if
 * nobody wrote in between, else it re-reads and re-applies (D1 has no read-modify-write
 * transaction across calls). `issued_ms` never goes back, so a collector can refuse an older one.
 */
export async function updatePolicy(env: Env, workspaceId: string, change: (p: Policy) => Policy): Promise<Policy> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { policy, version } = await loadPolicy(env, workspaceId);
    const issued = Math.max(Date.now(), policy.issued_ms + 1);
    const next = Policy.parse(workspacePart({ ...change(structuredClone(policy)), workspace: workspaceId, issued_ms: issued }));
    const payload = policyPayload(next);
    if (payload.length > MAX_WORKSPACE_POLICY_BYTES) {
      throw new AppError(
        413,
        "too_large",
        `The policy would be ${payload.length} characters; a policy may hold at most ${MAX_WORKSPACE_POLICY_BYTES}.`,
      );
    }
    const res = await db(env)
      .update(schema.policies)
      .set({ payload, etag: policyEtag({ payload }), version: version + 1, updatedMs: Date.now() })
      .where(and(eq(schema.policies.workspaceId, workspaceId), eq(schema.policies.version, version)))
      .run();
    if (res.meta.changes === 1) return next;
  }
  throw new AppError(409, "conflict", "The policy changed while it was being updated; try again.");
}

/** The workspace's policy signed by the server key, with its ETag (the operator's view). */
export async function signedPolicy(env: Env, workspaceId: string): Promise<{ signed: SignedPolicy; etag: string; policy: Policy }> {
  const { policy } = await loadPolicy(env, workspaceId);
  const key = await signingKey(env);
  const signed = signPolicy(policy, key.secret, key.keyId);
  return { signed, etag: policyEtag(signed), policy };
}

/**
 * The runs a host's policy lists as paused: the host's runs an operator paused or sealed that may
 * still be running there. A run leaves the list when it ends, when the computer ends its session
 * (an agent_stop arrives, stored or refused after a seal), when the cron closes it, or, sealed,
 * when nothing has come from it for 12 hours.
 */
export async function pausedRunsOf(d: Db, hostId: string, now: number, limit = MAX_PAUSED_RUNS_PER_HOST): Promise<string[]> {
  return (await pausedRunsQuery(d, hostId, now, limit).all()).map((row) => row.id);
}

function pausedRunsQuery(d: Db, hostId: string, now: number, limit: number) {
  const r = schema.runs;
  return d
    .select({ id: r.id })
    .from(r)
    .where(
      and(
        eq(r.hostId, hostId),
        sql`${r.pausedMs} IS NOT NULL AND ${r.hostStopped} = 0
          AND (${r.status} = 'live' OR (${r.status} = 'sealed' AND ${r.lastReceivedMs} >= ${now - QUIET_MS}))`,
      ),
    )
    .orderBy(r.id)
    .limit(limit);
}

/**
 * The policy one host is handed: the workspace's clauses plus its own pause state, naming the
 * host. A suspended host learns only that it is suspended (no clause of the workspace), under the
 * workspace's mode and retention so what it records while suspended stays true.
 */
export async function hostPolicy(env: Env, host: HostRow, now: number): Promise<Policy> {
  const d = db(env);
  // One round trip for the three reads: every recorder fetches this after every push.
  const [stored, paused, agents] = await d.batch([
    d.select().from(schema.policies).where(eq(schema.policies.workspaceId, host.workspaceId)),
    pausedRunsQuery(d, host.id, now, MAX_PAUSED_RUNS_PER_HOST),
    pausedAgentsQuery(d, host, MAX_PAUSED_AGENTS),
  ]);
  const policy = stored[0] ? Policy.parse(JSON.parse(stored[0].payload)) : (await loadPolicy(env, host.workspaceId)).policy;
  const own = { host: host.id, issued_ms: Math.max(policy.issued_ms, host.policyMs) };
  if (host.status === "suspended") {
    const shut = { tools: [], default_tool_decision: "deny" as const, models: [], budgets: [] };
    return { ...policy, ...own, ...shut, paused_runs: [], suspended_hosts: [host.id] };
  }
  const budgets = policy.budgets.length > 0 ? await workspaceObject(env, host.workspaceId).exhausted(host.id, policy.budgets, now) : null;
  // What leases hold only when they hold something (a collector before the field reads the rest).
  const exhausted = (budgets?.scopes ?? [])
    .slice(0, MAX_EXHAUSTED_BUDGETS)
    .map(({ host: _h, reserved_microusd: reserved, ...b }) => ((reserved ?? 0) > 0 ? { ...b, reserved_microusd: reserved } : b));
  return {
    ...policy,
    ...own,
    issued_ms: Math.max(own.issued_ms, budgets?.changedMs ?? 0),
    paused_runs: paused.map((r) => r.id),
    suspended_hosts: [],
    // Only when there is something to say: a collector from before these fields opens the rest.
    ...(agents.length > 0 ? { paused_agents: agents.map((a) => a.name) } : {}),
    ...(exhausted.length > 0 ? { exhausted_budgets: exhausted } : {}),
  };
}

/** The agent names paused on a host: on it, or on every host of its workspace. */
function pausedAgentsQuery(d: Db, host: Pick<HostRow, "id" | "workspaceId">, limit: number) {
  const p = schema.agentPauses;
  return d
    .selectDistinct({ name: p.name })
    .from(p)
    .where(and(eq(p.workspaceId, host.workspaceId), inArray(p.hostId, [host.id, "*"])))
    .orderBy(p.name)
    .limit(limit);
}

/** The workspace's Durable Object: push connections and budget counters. */
export function workspaceObject(env: Env, workspaceId: string) {
  return env.WORKSPACES.get(env.WORKSPACES.idFromName(workspaceId));
}

/** The host's policy payload and ETag; `sign()` signs it (only when the caller needs the body). */
export async function hostPolicyPayload(env: Env, host: HostRow, now: number) {
  const policy = await hostPolicy(env, host, now);
  const payload = policyPayload(policy);
  return {
    etag: policyEtag({ payload }),
    sign: async (): Promise<SignedPolicy> => {
      const key = await signingKey(env);
      return signPolicy(policy, key.secret, key.keyId);
    },
  };
}

/** The statement that marks a host's own policy part changed (its `issued_ms` moves on, never back). */
export function touchHostPolicy(d: Db, hostId: string, now: number) {
  return d
    .update(schema.hosts)
    .set({ policyMs: sql`max(${schema.hosts.policyMs} + 1, ${now})` })
    .where(eq(schema.hosts.id, hostId));
}

/**
 * Pauses a run (or lifts its pause) for its host's policy. Pausing one more run than a host's
 * policy may list is refused (409) before anything changes.
 */
export async function setPaused(env: Env, run: RunRow, paused: boolean, now: number): Promise<void> {
  const d = db(env);
  if (paused && run.pausedMs === null) {
    const listed = await pausedRunsOf(d, run.hostId, now, MAX_PAUSED_RUNS_PER_HOST + 1);
    if (!listed.includes(run.id) && listed.length >= MAX_PAUSED_RUNS_PER_HOST) {
      throw new AppError(
        409,
        "too_many_paused",
        `The run's computer already has ${MAX_PAUSED_RUNS_PER_HOST} paused runs that may still be running; resume or seal some first.`,
      );
    }
  }
  if (paused === (run.pausedMs !== null)) return;
  await d.batch([
    d
      .update(schema.runs)
      .set({ pausedMs: paused ? now : null })
      .where(eq(schema.runs.id, run.id)),
    touchHostPolicy(d, run.hostId, now),
  ]);
}

/** Body roles from the workspace row's JSON. A row that does not hold them is a fault (500), never "keep every role". */
export function parseRoles(text: string): Policy["retention"]["keep"] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new AppError(500, "internal", "The workspace's retention setting is damaged.", { cause });
  }
  const roles = Policy.shape.retention.shape.keep.safeParse(value);
  if (!roles.success) throw new AppError(500, "internal", "The workspace's retention setting is damaged.", { cause: roles.error });
  return roles.data;
}
