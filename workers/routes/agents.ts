import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { AgentName } from "../../protocol/index.ts";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db, schema } from "../db/client.ts";
import { setAgentPaused, withPauses } from "../lib/agent-pauses.ts";
import { RegisterAgentRequest, registerAgent, registeredAgents } from "../lib/registered-agents.ts";
import { valid } from "../validate.ts";
import { agentsOf, ownHost } from "./hosts.ts";

const IdParam = z.object({ id: z.string().min(1).max(64) });
const NameParam = z.object({ name: AgentName });
/** Which hosts a pause or resume concerns: one host, or (no `host`) every host of the workspace. */
const Target = z.strictObject({ host: z.string().min(1).max(64).optional() });

/** The Wrapped agents panel (every harness and custom agent per host, with its health), and agent pauses. */
export const agents = new Hono<OperatorEnv>()
  .use("/v1/agents", operatorAuth)
  .use("/v1/agents/*", operatorAuth)
  .use("/v1/hosts/:id/agents", operatorAuth)
  .get("/v1/hosts/:id/agents", valid("param", IdParam), async (c) => {
    const host = await ownHost(c.env, c.var.workspaceId, c.req.valid("param").id);
    return c.json({ agents: await withPauses(c.env, c.var.workspaceId, await agentsOf(c.env, host, Date.now())) });
  })
  .get("/v1/agents", async (c) => {
    const rows = await db(c.env).select().from(schema.hosts).where(eq(schema.hosts.workspaceId, c.var.workspaceId)).all();
    const now = Date.now();
    const all = await Promise.all(rows.map((h) => agentsOf(c.env, h, now)));
    return c.json({
      agents: await withPauses(c.env, c.var.workspaceId, all.flat()),
      registered: await registeredAgents(c.env, c.var.workspaceId),
    });
  })
  .post("/v1/agents", valid("json", RegisterAgentRequest, { what: "agent registration", empty: "refused" }), async (c) => {
    const { name, ttl_minutes } = c.req.valid("json");
    const registered = await registerAgent(c.env, c.var.workspaceId, c.var.tokenId, name, ttl_minutes);
    return c.json(registered, registered.created ? 201 : 200);
  })
  .post("/v1/agents/:name/pause", valid("param", NameParam), valid("json", Target), async (c) => {
    const { host } = c.req.valid("json");
    const row = host ? await ownHost(c.env, c.var.workspaceId, host) : null;
    return c.json(await setAgentPaused(c.env, c.var.workspaceId, c.req.valid("param").name, row, true));
  })
  .post("/v1/agents/:name/resume", valid("param", NameParam), valid("json", Target), async (c) => {
    const { host } = c.req.valid("json");
    const row = host ? await ownHost(c.env, c.var.workspaceId, host) : null;
    return c.json(await setAgentPaused(c.env, c.var.workspaceId, c.req.valid("param").name, row, false));
  });
