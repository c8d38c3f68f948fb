import { eq } from "drizzle-orm";
import type { HostRow } from "../auth/host.ts";
import { db, schema } from "../db/client.ts";
import { hostPolicyPayload, workspaceObject } from "./policy-store.ts";

/**
 * Tells the recorders of the given hosts (every host of the workspace when none are given) that
 * their policy changed, naming each host's new ETag. Only hosts with a push connection open are
 * looked at. A push that fails is logged, never the operator's error: the change is stored, and
 * a recorder that missed the push learns it on its next poll.
 */
export async function pushPolicies(env: Env, workspaceId: string, only?: HostRow[]): Promise<number> {
  try {
    const hub = workspaceObject(env, workspaceId);
    const connected = new Set(await hub.connectedHosts());
    if (connected.size === 0) return 0;
    const hosts = (only ?? (await db(env).select().from(schema.hosts).where(eq(schema.hosts.workspaceId, workspaceId)).all())).filter(
      (h) => connected.has(h.id) && h.status !== "unenrolled",
    );
    const now = Date.now();
    const etags = Object.fromEntries(
      await Promise.all(hosts.map(async (h) => [h.id, (await hostPolicyPayload(env, h, now)).etag] as const)),
    );
    return await hub.push(etags);
  } catch (err) {
    console.error("policy push failed", workspaceId, err);
    return 0;
  }
}

/** Pushes one host's new policy (re-read, so a status just written is what it is handed). */
export async function pushHost(env: Env, hostId: string): Promise<number> {
  const host = await db(env).select().from(schema.hosts).where(eq(schema.hosts.id, hostId)).get();
  return host ? pushPolicies(env, host.workspaceId, [host]) : 0;
}
