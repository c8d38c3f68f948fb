import { and, eq, sql } from "drizzle-orm";
import {
  MAX_EXHAUSTED_BUDGETS,
  MAX_PAUSED_AGENTS,
  MAX_PAUSED_RUNS_PER_HOST,
  type Policy,
  policyEtag,
  policyPayload,
  type SignedPolicy,
  signPolicy,
} from "../../protocol/index.ts";
import { type HostRow, hostChanged, hostObject } from "../auth/host.ts";
import type { ExhaustedScope } from "../workspace/budgets.ts";
import { type Db, db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { signingKey } from "../keys.ts";
import { workspaceObject } from "./policy-store.ts";
import { QUIET_MS } from "./quiet.ts";
import type { RunRow } from "./run-rows.ts";

/**
 * A host's own part of its policy, as its HostObject holds it (read from D1 when missing or an
 * operator changed it, `refresh`): its paused runs, the agent names paused on it alone, and when
 * its own part last changed.
 */
export interface HostPart {
  pausedRuns: string[];
  pausedAgents: string[];
  policyMs: number;
}

/** The workspace's part of every host's policy, as its WorkspaceObject holds it. */
export interface WorkspacePart {
  /** The workspace's clauses (no host's state in it). */
  policy: Policy;
  /** Agent names paused on every host of the workspace. */
  pausedAgents: string[];
  /** When the workspace-wide pauses last changed. */
  pausesMs: number;
  /** The exhausted budget scopes that concern the host asked about, and when the exhausted set last changed. */
  exhausted: { scopes: ExhaustedScope[]; changedMs: number };
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
 * The runs a host's policy lists as paused: the host's runs an operator paused or sealed that may
 * still be running there. A run leaves the list when it ends, when the computer ends its session
 * (an agent_stop arrives, stored or refused after a seal), when it is closed quiet, or, sealed,
 * when nothing has come from it for 12 hours.
 */
export async function pausedRunsOf(d: Db, hostId: string, now: number, limit = MAX_PAUSED_RUNS_PER_HOST): Promise<string[]> {
  return (await pausedRunsQuery(d, hostId, now, limit).all()).map((row) => row.id);
}

/** Reads a host's own part from D1 (one round trip): what its HostObject holds until an operator changes it. */
export async function readHostPart(env: Env, hostId: string, now: number): Promise<HostPart> {
  const d = db(env);
  const p = schema.agentPauses;
  const [paused, agents, host] = await d.batch([
    pausedRunsQuery(d, hostId, now, MAX_PAUSED_RUNS_PER_HOST),
    d.select({ name: p.name }).from(p).where(eq(p.hostId, hostId)).orderBy(p.name).limit(MAX_PAUSED_AGENTS),
    d.select({ policyMs: schema.hosts.policyMs }).from(schema.hosts).where(eq(schema.hosts.id, hostId)),
  ]);
  return { pausedRuns: paused.map((r) => r.id), pausedAgents: agents.map((a) => a.name), policyMs: host[0]?.policyMs ?? 0 };
}

/**
 * The policy one host is handed: the workspace's part plus its own, naming the host, from the two
 * objects that hold them (no D1 statement). See {@link composePolicy}.
 */
export async function hostPolicy(env: Env, host: HostRow, now: number, part?: HostPart): Promise<Policy> {
  const [own, ws] = await Promise.all([
    part ?? hostObject(env, host.id).policyPart(host.id, now),
    workspaceObject(env, host.workspaceId).policyPart(host.id, now),
  ]);
  return composePolicy(host, own, ws);
}

/**
 * One host's policy from the workspace's part and its own (what a fetch answers and what a push
 * hub carries, `workspace/push-hub.ts`). A suspended host learns only that it is suspended (no
 * clause of the workspace), under the workspace's mode and retention so what it records while
 * suspended stays true.
 */
export function composePolicy(host: Pick<HostRow, "id" | "status">, own: HostPart, ws: WorkspacePart): Policy {
  const policy = ws.policy;
  const issued = Math.max(policy.issued_ms, own.policyMs, ws.pausesMs);
  const mine = { host: host.id, issued_ms: issued };
  if (host.status === "suspended") {
    const shut = { tools: [], default_tool_decision: "deny" as const, models: [], budgets: [] };
    return { ...policy, ...mine, ...shut, paused_runs: [], suspended_hosts: [host.id] };
  }
  // What leases hold only when they hold something (a collector before the field reads the rest).
  const exhausted = ws.exhausted.scopes
    .slice(0, MAX_EXHAUSTED_BUDGETS)
    .map(({ host: _h, reserved_microusd: reserved, ...b }) => ((reserved ?? 0) > 0 ? { ...b, reserved_microusd: reserved } : b));
  const agents = [...new Set([...own.pausedAgents, ...ws.pausedAgents])].sort().slice(0, MAX_PAUSED_AGENTS);
  return {
    ...policy,
    ...mine,
    issued_ms: Math.max(issued, ws.exhausted.changedMs),
    paused_runs: own.pausedRuns,
    suspended_hosts: [],
    // Only when there is something to say: a collector from before these fields opens the rest.
    ...(agents.length > 0 ? { paused_agents: agents } : {}),
    ...(exhausted.length > 0 ? { exhausted_budgets: exhausted } : {}),
  };
}

/** The host's policy payload and ETag; `sign()` signs it (only when the caller needs the body). */
export async function hostPolicyPayload(env: Env, host: HostRow, now: number, part?: HostPart) {
  const policy = await hostPolicy(env, host, now, part);
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
  await hostChanged(env, run.hostId);
}
