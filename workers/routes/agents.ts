import { and, eq, sql } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { AgentName, HARNESSES, MAX_PAUSED_AGENTS } from "../../protocol/index.ts";
import type { HostRow } from "../auth/host.ts";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db, schema } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { touchHostPolicy } from "../lib/policy-store.ts";
import { pushHost, pushPolicies } from "../lib/push.ts";
import { valid } from "../validate.ts";
import { agentsOf, ownHost } from "./hosts.ts";

const IdParam = z.object({ id: z.string().min(1).max(64) });
const NameParam = z.object({ name: AgentName });
/** Which hosts a pause or resume concerns: one host, or (no `host`) every host of the workspace. */
const Target = z.strictObject({ host: z.string().min(1).max(64).optional() });

/** The pauses of an agent name in the workspace: `*` for every host, else the host's id. */
async function pausesOf(env: Env, workspaceId: string, name: string) {
  const p = schema.agentPauses;
  const rows = await db(env)
    .select()
    .from(p)
    .where(and(eq(p.workspaceId, workspaceId), eq(p.name, name)))
    .all();
  return rows.map((r) => ({ host: r.hostId, paused_ms: r.pausedMs }));
}

/** 404 unless the name is a built-in harness or an agent the workspace has seen. */
async function knownAgent(env: Env, workspaceId: string, name: string): Promise<void> {
  if ((HARNESSES as readonly string[]).includes(name)) return;
  const row = await db(env)
    .select({ name: schema.agents.name })
    .from(schema.agents)
    .where(and(eq(schema.agents.workspaceId, workspaceId), eq(schema.agents.name, name)))
    .get();
  if (!row) throw notFound("agent");
}

async function setAgentPaused(env: Env, workspaceId: string, name: string, host: HostRow | null, paused: boolean) {
  await knownAgent(env, workspaceId, name);
  const d = db(env);
  const p = schema.agentPauses;
  const now = Date.now();
  const touch = host
    ? touchHostPolicy(d, host.id, now)
    : d
        .update(schema.hosts)
        .set({ policyMs: sql`max(${schema.hosts.policyMs} + 1, ${now})` })
        .where(eq(schema.hosts.workspaceId, workspaceId));
  if (paused) {
    const names = await d
      .selectDistinct({ name: p.name })
      .from(p)
      .where(eq(p.workspaceId, workspaceId))
      .limit(MAX_PAUSED_AGENTS + 1)
      .all();
    if (!names.some((n) => n.name === name) && names.length >= MAX_PAUSED_AGENTS)
      throw new AppError(409, "too_many_paused", `The workspace already has ${MAX_PAUSED_AGENTS} paused agents; resume some first.`);
    await d.batch([
      d
        .insert(p)
        .values({ workspaceId, hostId: host?.id ?? "*", name, pausedMs: now })
        .onConflictDoNothing(),
      touch,
    ]);
  } else {
    // Resuming on one host lifts that host's pause; resuming everywhere lifts every pause of the name.
    const where = host
      ? and(eq(p.workspaceId, workspaceId), eq(p.name, name), eq(p.hostId, host.id))
      : and(eq(p.workspaceId, workspaceId), eq(p.name, name));
    await d.batch([d.delete(p).where(where), touch]);
  }
  await (host ? pushHost(env, host.id) : pushPolicies(env, workspaceId));
  const pauses = await pausesOf(env, workspaceId, name);
  const applies = pauses.some((x) => x.host === "*" || (host !== null && x.host === host.id));
  return { name, host: host?.id ?? null, paused: applies, pauses };
}

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
    return c.json({ agents: await withPauses(c.env, c.var.workspaceId, all.flat()) });
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

/** Marks each listed agent paused when it is paused on its host or on every host. */
async function withPauses<T extends { host_id: string; name: string }>(env: Env, workspaceId: string, list: T[]) {
  const p = schema.agentPauses;
  const rows = await db(env).select().from(p).where(eq(p.workspaceId, workspaceId)).all();
  const paused = new Set(rows.map((r) => `${r.hostId} ${r.name}`));
  return list.map((a) => ({ ...a, paused: paused.has(`* ${a.name}`) || paused.has(`${a.host_id} ${a.name}`) }));
}
