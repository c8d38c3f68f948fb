import { eq } from "drizzle-orm";
import type { z } from "zod";
import { Policy, SERVER_OWNED_POLICY_FIELDS } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { notFound } from "../errors.ts";
import { parseRoles, signedPolicy, updatePolicy } from "./policy-store.ts";
import { pushPolicies } from "./push.ts";

/**
 * What an operator may set of a policy; the server owns the rest (workspace, host, issue time,
 * paused runs and agents, suspended hosts, exhausted budgets).
 */
export const PolicyInput = Policy.omit(SERVER_OWNED_POLICY_FIELDS);
/** One of {@link PolicyInput}. */
export type PolicyInput = z.output<typeof PolicyInput>;

type WorkspaceRow = typeof schema.workspaces.$inferSelect;

/** The caller's own workspace, or 404 for any other id. */
export async function ownWorkspace(env: Env, workspaceId: string, id: string): Promise<WorkspaceRow> {
  if (id !== workspaceId) throw notFound("workspace");
  const ws = await db(env).select().from(schema.workspaces).where(eq(schema.workspaces.id, id)).get();
  if (!ws) throw notFound("workspace");
  return ws;
}

/** A workspace as the operator API shows it. */
export function workspaceView(ws: WorkspaceRow) {
  return {
    id: ws.id,
    name: ws.name,
    mode: ws.mode,
    retention: { mode: ws.retentionMode, keep: parseRoles(ws.retentionKeep) },
    rows_kept_days: ws.rowsKeptDays,
    created_ms: ws.createdMs,
  };
}

/**
 * Replaces the workspace's clauses, mode and retention; its row follows the policy, and every
 * connected recorder is told at once. Answers the signed policy and how far the change reached.
 */
export async function replacePolicy(env: Env, workspaceId: string, input: PolicyInput) {
  // A replacement: a field the input leaves out (the optional `upstreams`) is not kept from before.
  await updatePolicy(env, workspaceId, ({ upstreams: _before, ...p }) => ({ ...p, ...input }));
  await db(env)
    .update(schema.workspaces)
    .set({ mode: input.mode, retentionMode: input.retention.mode, retentionKeep: JSON.stringify(input.retention.keep) })
    .where(eq(schema.workspaces.id, workspaceId));
  const propagation = await pushPolicies(env, workspaceId);
  return { ...(await signedPolicy(env, workspaceId)), propagation };
}
