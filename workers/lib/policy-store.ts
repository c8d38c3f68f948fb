import { and, eq } from "drizzle-orm";
import { defaultPolicy, Policy, policyEtag, policyPayload, type SignedPolicy, signPolicy } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { signingKey } from "../keys.ts";

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
  const read = await readPolicy(env, workspaceId);
  if (read.created) await policyChanged(env, workspaceId, read.policy);
  return read;
}

/** {@link loadPolicy} without telling the workspace's object (what the object itself reads when it holds no copy). */
export async function readPolicy(env: Env, workspaceId: string): Promise<{ policy: Policy; version: number; created: boolean }> {
  const d = db(env);
  const row = await d.select().from(schema.policies).where(eq(schema.policies.workspaceId, workspaceId)).get();
  if (row) return { policy: Policy.parse(JSON.parse(row.payload)), version: row.version, created: false };
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
  return { ...(await readPolicy(env, workspaceId)), created: true };
}

/** Hands the workspace's object the stored policy (its copy: a new chain's mode, the budget clauses, what host policies are made of). */
export async function policyChanged(env: Env, workspaceId: string, policy: Policy): Promise<void> {
  await workspaceObject(env, workspaceId).setPolicy(policy);
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
    if (res.meta.changes === 1) {
      // The copy the workspace's object holds (a new chain's mode) follows the stored policy.
      await policyChanged(env, workspaceId, next);
      return next;
    }
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

/** The workspace's Durable Object: its budget counters and its copy of the policy. */
export function workspaceObject(env: Env, workspaceId: string) {
  return env.WORKSPACES.get(env.WORKSPACES.idFromName(workspaceId));
}

/** The workspace's mode, as its Durable Object holds it (a new chain is created under it). */
export function workspaceMode(env: Env, workspaceId: string): Promise<"enforce" | "observe"> {
  return workspaceObject(env, workspaceId).mode();
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
