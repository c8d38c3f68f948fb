import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db, schema } from "../db/client.ts";
import { valid } from "../validate.ts";
import { agentsOf, ownHost } from "./hosts.ts";

const IdParam = z.object({ id: z.string().min(1).max(64) });

/** The Wrapped agents panel: every harness and custom agent per host, with its health. */
export const agents = new Hono<OperatorEnv>()
  .use("/v1/agents", operatorAuth)
  .use("/v1/hosts/:id/agents", operatorAuth)
  .get("/v1/hosts/:id/agents", valid("param", IdParam), async (c) => {
    const host = await ownHost(c.env, c.var.workspaceId, c.req.valid("param").id);
    return c.json({ agents: await agentsOf(c.env, host, Date.now()) });
  })
  .get("/v1/agents", async (c) => {
    const rows = await db(c.env).select().from(schema.hosts).where(eq(schema.hosts.workspaceId, c.var.workspaceId)).all();
    const now = Date.now();
    const all = await Promise.all(rows.map((h) => agentsOf(c.env, h, now)));
    return c.json({ agents: all.flat() });
  });
