import type { schema } from "../db/client.ts";
import type { RunCopy } from "../lib/run-rows.ts";

/** A chain's spend total as its D1 `spend` row holds it. */
export type SpendRow = typeof schema.spend.$inferInsert;

/** What a run's batches say of its agent (harness or custom agent) on its host, for the Wrapped agents panel. */
export interface AgentSeen {
  hostId: string;
  name: string;
  workspaceId: string;
  /** Server time of the run's last batch. */
  deliveredMs: number;
  /** Since when the run has held frames beyond a hole (data the server knows of and does not have); null: nothing held. */
  pendingSinceMs: number | null;
  /** The last time part of a batch was refused, since the row was last sent; null: none. */
  refusedMs: number | null;
}

/**
 * One change of the fleet rows, as the objects that own it send it (the run's ChainObject, the
 * host's HostObject) and the projection's consumer writes it to D1. Each carries the whole current
 * state with the owner's version, never a delta, so a message seen twice, late or out of order
 * never puts an older state back.
 */
export type ProjectionMessage =
  | {
      kind: "chain";
      chain: string;
      /** The chain's change counter when the message was made. */
      version: number;
      /** The run's row; null for a computer's own chain (which has spend, and no row). */
      run: RunCopy | null;
      agent: AgentSeen | null;
      /** Every spend total of the chain. */
      spend: SpendRow[];
    }
  | { kind: "host_seen"; hostId: string; lastSeenMs: number };

/** Sends fleet-row changes to the projection queue (one message each, one call). */
export async function project(env: Pick<Env, "PROJECTION">, messages: ProjectionMessage[]): Promise<void> {
  if (messages.length === 0) return;
  if (messages.length === 1) await env.PROJECTION.send(messages[0]!, { contentType: "json" });
  else await env.PROJECTION.sendBatch(messages.map((body) => ({ body, contentType: "json" as const })));
}
