import { and, eq } from "drizzle-orm";
import {
  defaultPolicy,
  Policy,
  policyEtag,
  signPolicy,
  toRecordJson,
  type RecordJsonValue,
  type SignedPolicy,
} from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { serverKey } from "../keys.ts";

/** The workspace's current policy and its row version, creating the default one on first use. */
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
  const payload = toRecordJson(policy as RecordJsonValue);
  await d
    .insert(schema.policies)
    .values({ workspaceId, payload, etag: policyEtag({ payload }), version: 1, updatedMs: now })
    .onConflictDoNothing();
  return loadPolicy(env, workspaceId);
}

/**
 * The largest workspace policy payload: half of what a collector accepts
 * (protocol `MAX_POLICY_BYTES`), so a host's own pause state always fits beside it.
 */
export const MAX_WORKSPACE_POLICY_BYTES = 512 * 1024;

/**
 * Replaces the policy through `change`, optimistically: the write applies only if nobody wrote in
 * between, else it re-reads and re-applies (D1 has no read-modify-write transaction across calls).
 */
export async function updatePolicy(env: Env, workspaceId: string, change: (p: Policy) => Policy): Promise<Policy> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { policy, version } = await loadPolicy(env, workspaceId);
    const next = Policy.parse({ ...change(structuredClone(policy)), workspace: workspaceId, issued_ms: Date.now() });
    const payload = toRecordJson(next as RecordJsonValue);
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

/** The workspace's policy signed by the server key, with its ETag. */
export async function signedPolicy(env: Env, workspaceId: string): Promise<{ signed: SignedPolicy; etag: string; policy: Policy }> {
  const { policy } = await loadPolicy(env, workspaceId);
  const key = serverKey(env);
  const signed = signPolicy(policy, key.secret, key.keyId);
  return { signed, etag: policyEtag(signed), policy };
}

/** Adds or removes one id in a policy list, keeping it sorted and unique. */
export function toggle(list: string[], id: string, on: boolean): string[] {
  const set = new Set(list);
  if (on) set.add(id);
  else set.delete(id);
  return [...set].sort();
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
