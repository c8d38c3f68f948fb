import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { Policy } from "../../protocol/index.ts";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db, schema } from "../db/client.ts";
import { signedPolicy, updatePolicy } from "../lib/policy-store.ts";
import { pushPolicies } from "../lib/push.ts";
import { ownWorkspace, PolicyInput, replacePolicy, workspaceView } from "../lib/workspace-settings.ts";
import { WORKSPACE_POLICY_PATH } from "../request-body.ts";
import { valid } from "../validate.ts";

const Settings = z.strictObject({
  name: z.string().min(1).max(128).optional(),
  mode: z.enum(["enforce", "observe"]).optional(),
  retention: Policy.shape.retention.optional(),
  /** Days an ended run's fleet rows stay in D1 after its last batch before they go to the R2 archive. */
  rows_kept_days: z.number().int().min(1).max(3650).optional(),
});
const IdParam = z.object({ id: z.string().min(1).max(128) });

export const workspaces = new Hono<OperatorEnv>()
  .use("/v1/workspaces/*", operatorAuth)
  .get("/v1/workspaces/:id", valid("param", IdParam), async (c) =>
    c.json(workspaceView(await ownWorkspace(c.env, c.var.workspaceId, c.req.valid("param").id))),
  )
  .patch("/v1/workspaces/:id", valid("param", IdParam), valid("json", Settings), async (c) => {
    const ws = await ownWorkspace(c.env, c.var.workspaceId, c.req.valid("param").id);
    const s = c.req.valid("json");
    // The policy first: if it cannot be updated (409), nothing has changed. Only the fields sent
    // are written, so a concurrent change to the others is not undone.
    if (s.mode !== undefined || s.retention !== undefined) {
      await updatePolicy(c.env, ws.id, (p) => ({ ...p, mode: s.mode ?? p.mode, retention: s.retention ?? p.retention }));
    }
    const set = {
      ...(s.name !== undefined ? { name: s.name } : {}),
      ...(s.mode !== undefined ? { mode: s.mode } : {}),
      ...(s.retention !== undefined ? { retentionMode: s.retention.mode, retentionKeep: JSON.stringify(s.retention.keep) } : {}),
      ...(s.rows_kept_days !== undefined ? { rowsKeptDays: s.rows_kept_days } : {}),
    };
    if (Object.keys(set).length > 0) await db(c.env).update(schema.workspaces).set(set).where(eq(schema.workspaces.id, ws.id));
    const propagation = s.mode !== undefined || s.retention !== undefined ? await pushPolicies(c.env, ws.id) : undefined;
    const row = (await db(c.env).select().from(schema.workspaces).where(eq(schema.workspaces.id, ws.id)).get())!;
    return c.json({ ...workspaceView(row), ...(propagation ? { propagation } : {}) });
  })
  .get(WORKSPACE_POLICY_PATH, valid("param", IdParam), async (c) => {
    const ws = await ownWorkspace(c.env, c.var.workspaceId, c.req.valid("param").id);
    const { policy, etag, signed } = await signedPolicy(c.env, ws.id);
    return c.json({ policy, etag, signed });
  })
  .put(WORKSPACE_POLICY_PATH, valid("param", IdParam), valid("json", PolicyInput), async (c) => {
    const ws = await ownWorkspace(c.env, c.var.workspaceId, c.req.valid("param").id);
    const { policy, etag, signed, propagation } = await replacePolicy(c.env, ws.id, c.req.valid("json"));
    return c.json({ policy, etag, signed, propagation });
  });
