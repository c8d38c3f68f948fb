import { and, eq } from "drizzle-orm";
import { HARNESSES, MAX_PAUSED_AGENTS } from "../../protocol/index.ts";
import { type HostRow, hostChanged } from "../auth/host.ts";
import { db, schema } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { touchHostPolicy } from "./host-policy.ts";
import { workspaceObject } from "./policy-store.ts";
import { pushHost, pushPolicies } from "./push.ts";

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

/**
 * Pauses or resumes an agent name on one host (`host`) or across the workspace (`null`), and pushes
 * the change to the recorders concerned, answering once they applied it (or naming those that
 * have not). The API route and the console both call this.
 */
export async function setAgentPaused(env: Env, workspaceId: string, name: string, host: HostRow | null, paused: boolean) {
  await knownAgent(env, workspaceId, name);
  const d = db(env);
  const p = schema.agentPauses;
  const now = Date.now();
  // A pause on one host moves that host's policy on; one on every host moves the workspace's part
  // on (its object's `pausesMs`), never every host's row.
  const touch = host ? [touchHostPolicy(d, host.id, now)] : [];
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
      ...touch,
    ]);
  } else {
    // Resuming on one host lifts that host's pause; resuming everywhere lifts every pause of the name.
    const where = host
      ? and(eq(p.workspaceId, workspaceId), eq(p.name, name), eq(p.hostId, host.id))
      : and(eq(p.workspaceId, workspaceId), eq(p.name, name));
    await d.batch([d.delete(p).where(where), ...touch]);
  }
  // The objects that hand out host policies hold copies: the host's own part, and the workspace's.
  await (host ? hostChanged(env, host.id) : pausedEverywhere(env, workspaceId, now));
  const propagation = await (host ? pushHost(env, host.id) : pushPolicies(env, workspaceId));
  const pauses = await pausesOf(env, workspaceId, name);
  const applies = pauses.some((x) => x.host === "*" || (host !== null && x.host === host.id));
  return { name, host: host?.id ?? null, paused: applies, pauses, propagation };
}

/** The agent names paused on every host of the workspace (at most MAX_PAUSED_AGENTS, by name), and when each was. */
export function workspacePausedAgents(env: Env, workspaceId: string) {
  const p = schema.agentPauses;
  return db(env)
    .select({ name: p.name, pausedMs: p.pausedMs })
    .from(p)
    .where(and(eq(p.workspaceId, workspaceId), eq(p.hostId, "*")))
    .orderBy(p.name)
    .limit(MAX_PAUSED_AGENTS)
    .all();
}

/** Hands the workspace's object the agent names now paused on every host. */
async function pausedEverywhere(env: Env, workspaceId: string, now: number): Promise<void> {
  const rows = await workspacePausedAgents(env, workspaceId);
  await workspaceObject(env, workspaceId).setPausedAgents(
    rows.map((r) => r.name),
    now,
  );
}

/** {@link markPaused} with the workspace's pauses read from D1. */
export async function withPauses<T extends { host_id: string; name: string }>(env: Env, workspaceId: string, list: T[]) {
  return markPaused(list, await agentPauses(env, workspaceId));
}

/**
 * Marks each listed agent paused when it is paused on its host or on every host; `paused_where`
 * says which (`workspace` wins when both hold).
 */
export function markPaused<T extends { host_id: string; name: string }>(list: T[], pauses: { name: string; host: string }[]) {
  const paused = new Set(pauses.map((r) => `${r.host} ${r.name}`));
  return list.map((a) => {
    const where = paused.has(`* ${a.name}`) ? "workspace" : paused.has(`${a.host_id} ${a.name}`) ? "host" : null;
    return { ...a, paused: where !== null, paused_where: where as "workspace" | "host" | null };
  });
}

/** Every agent pause of the workspace: `host` is `*` for a pause on every host. */
export async function agentPauses(env: Env, workspaceId: string) {
  const p = schema.agentPauses;
  const rows = await db(env).select().from(p).where(eq(p.workspaceId, workspaceId)).orderBy(p.name).all();
  return rows.map((r) => ({ name: r.name, host: r.hostId, paused_ms: r.pausedMs }));
}
