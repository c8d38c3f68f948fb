import { and, eq, inArray, ne } from "drizzle-orm";
import { z } from "zod";
import { AgentName, plural, RESERVED_AGENT_NAMES } from "../../protocol/index.ts";
import { serverOrigin } from "../auth/host.ts";
import { db, schema } from "../db/client.ts";
import { EnrollmentTtlMinutes, mintEnrollmentToken } from "./tokens.ts";

/** A custom agent's name: the spec's rule (protocol `AgentName`), and never a built-in harness or runtime name. */
export const CustomAgentName = AgentName.refine((n) => !(RESERVED_AGENT_NAMES as readonly string[]).includes(n), {
  message: `is a built-in harness or runtime name (${RESERVED_AGENT_NAMES.join(", ")}); a custom agent takes its own`,
});

/** How long the token a registration issues lives by default, in minutes. */
export const REGISTRATION_TTL_MINUTES = 24 * 60;

/** The command a registration's token is for, on the computer that will run the agent. */
export function agentEnrollCommand(env: Env, token: string): string {
  return `oxagen agent enroll --server ${serverOrigin(env)} --token ${token}`;
}

/**
 * Registers a custom agent name in the workspace (again is a no-op) and issues a one-time
 * enrollment token for the computer that will run it: that computer's host wraps the agent, so
 * the Wrapped agents panel shows it idle until it calls the hook. The token is answered once.
 */
export async function registerAgent(env: Env, workspaceId: string, tokenId: string, name: string, ttlMinutes: number) {
  const now = Date.now();
  const added = await db(env)
    .insert(schema.registeredAgents)
    .values({ workspaceId, name, createdMs: now, createdBy: tokenId })
    .onConflictDoNothing()
    .returning();
  const minted = await mintEnrollmentToken(env, workspaceId, tokenId, ttlMinutes, name);
  return {
    name,
    created: added.length === 1,
    token_id: minted.id,
    token: minted.token,
    expires_ms: minted.expires_ms,
    command: agentEnrollCommand(env, minted.token),
  };
}

/** One registered agent: when, by whom, the computers wrapping it, and its state before any of them enrolled. */
export interface RegisteredAgent {
  name: string;
  created_ms: number;
  created_by: string | null;
  hosts: string[];
  health: "idle" | null;
  reason: string;
}

/** The workspace's registered agents (two indexed reads: the names, then the hosts that wrap them). */
export async function registeredAgents(env: Env, workspaceId: string): Promise<RegisteredAgent[]> {
  const d = db(env);
  const rows = await d.select().from(schema.registeredAgents).where(eq(schema.registeredAgents.workspaceId, workspaceId)).all();
  if (rows.length === 0) return [];
  const a = schema.agents;
  const wrapping = await d
    .select({ name: a.name, hostId: a.hostId })
    .from(a)
    .innerJoin(schema.hosts, eq(schema.hosts.id, a.hostId))
    .where(
      and(
        eq(a.workspaceId, workspaceId),
        ne(schema.hosts.status, "unenrolled"),
        inArray(
          a.name,
          rows.map((r) => r.name),
        ),
      ),
    )
    .all();
  return rows
    .sort((x, y) => x.name.localeCompare(y.name))
    .map((r) => {
      const hosts = wrapping.filter((w) => w.name === r.name).map((w) => w.hostId);
      return {
        name: r.name,
        created_ms: r.createdMs,
        created_by: r.createdBy,
        hosts,
        health: hosts.length === 0 ? "idle" : null,
        reason:
          hosts.length === 0
            ? "registered; no computer has enrolled for it yet"
            : `wrapped on ${plural(hosts.length, "computer")} (its health is shown per computer)`,
      };
    });
}

/** `POST /v1/agents`: a name to register, and how long its token lives. */
export const RegisterAgentRequest = z.strictObject({
  name: CustomAgentName,
  ttl_minutes: EnrollmentTtlMinutes.default(REGISTRATION_TTL_MINUTES),
});
