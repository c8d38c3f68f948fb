import { HARNESSES } from "../../protocol/index.ts";
import type { schema } from "../db/client.ts";

type AgentRow = Omit<typeof schema.agents.$inferSelect, "createdMs">;
type HostRow = typeof schema.hosts.$inferSelect;

/** Data pending longer than this makes an agent degraded (the wrap-an-agent page). */
export const PENDING_DEGRADED_MS = 10 * 60_000;
/** A collector that has made no signed call for this long is down (it reads its policy every few minutes). */
export const DOWN_AFTER_MS = 15 * 60_000;

/** Health states of the Wrapped agents panel. */
export type HealthState = "healthy" | "pending" | "degraded" | "down" | "idle" | "not_wrapped";

/**
 * One agent's health from what the server sees: the host's last signed call, the agent's last
 * delivered batch, holes it still waits on (or the collector reported pending), refusals, and the
 * collector's own report of missing hooks. First match wins, in the order below.
 */
export function agentHealth(
  agent: AgentRow | null,
  host: Pick<HostRow, "lastSeenMs" | "status">,
  now: number,
): { state: HealthState; reason: string } {
  if (!agent || (agent.wrappedMs === null && agent.firstSeenMs === null))
    return { state: "not_wrapped", reason: "this name has never called the hook on this computer" };
  if (host.lastSeenMs === null || now - host.lastSeenMs > DOWN_AFTER_MS) {
    return { state: "down", reason: "the collector has not answered for over 15 minutes" };
  }
  if (host.status === "suspended") return { state: "degraded", reason: "the computer is suspended: Oxagen refuses its data" };
  if (agent.hooksMissing === 1) return { state: "degraded", reason: "the collector reports the hooks are missing" };
  if (agent.lastRefusedMs !== null && (agent.lastDeliveredMs === null || agent.lastRefusedMs >= agent.lastDeliveredMs)) {
    return { state: "degraded", reason: "Oxagen refused part of the last delivery" };
  }
  if (agent.pendingSinceMs !== null && (agent.degradedMs !== null || now - agent.pendingSinceMs > PENDING_DEGRADED_MS)) {
    return { state: "degraded", reason: "data has been pending for more than 10 minutes" };
  }
  if (agent.pendingSinceMs !== null) return { state: "pending", reason: "recorded, waiting to send" };
  if (agent.firstSeenMs === null) return { state: "idle", reason: "wrapped, no runs yet" };
  return { state: "healthy", reason: "runs recorded and delivered to Oxagen" };
}

/** Whether a wrapped name is a built-in harness or a custom agent. */
export function agentKind(name: string): "harness" | "custom" {
  return (HARNESSES as readonly string[]).includes(name) ? "harness" : "custom";
}
