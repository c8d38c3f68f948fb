/** WorkspaceObject storage schema, versioned (see `lib/do-schema.ts`). */

import { migrateSteps } from "../lib/do-schema.ts";
import { CALL_COUNT_STEPS } from "./call-counts.ts";
import { COUNTER_STEPS } from "./counters.ts";
import { TOOL_METER_STEP } from "./tool-meter.ts";

/** Bump when a step is added below. */
export const SCHEMA_VERSION = 5;

const STEPS: Record<number, string[]> = {
  1: [
    // Each run's priced spend per UTC day, as its ChainObject totals it: written with max(), so a
    // report seen twice, or out of order, never counts twice.
    `CREATE TABLE run_spend (run_id TEXT NOT NULL, day TEXT NOT NULL, host_id TEXT NOT NULL, microusd INTEGER NOT NULL,
      PRIMARY KEY (run_id, day))`,
    `CREATE INDEX run_spend_day ON run_spend (day)`,
    `CREATE INDEX run_spend_host ON run_spend (host_id, day)`,
    // Budget held back for calls not yet priced (the gateway's leases): counted as spent until settled or expired.
    `CREATE TABLE leases (id TEXT PRIMARY KEY, host_id TEXT NOT NULL, run_id TEXT NOT NULL, day TEXT NOT NULL,
      microusd INTEGER NOT NULL, expires_ms INTEGER NOT NULL)`,
    `CREATE INDEX leases_expiry ON leases (expires_ms)`,
    // One row: when the set of exhausted budget scopes last changed (a host policy's issued_ms never goes back).
    `CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), changed_ms INTEGER NOT NULL, exhausted TEXT NOT NULL)`,
  ],
  2: TOOL_METER_STEP,
  3: [
    // The workspace's mode, a copy of its D1 row's (set by the operator actions that change it; read from D1 once when missing).
    `CREATE TABLE settings (id INTEGER PRIMARY KEY CHECK (id = 1), mode TEXT NOT NULL)`,
  ],
  4: [
    // Running totals per scope and window (workspace/counters.ts), filled once from the day totals, leases and tool charges held.
    ...COUNTER_STEPS,
    `CREATE INDEX leases_run ON leases (run_id, expires_ms)`,
    // The workspace's policy (its clauses, a copy of the stored one: set with it, read from D1 once when missing),
    // the agent names paused on every host and when those last changed, and the UTC day the exhausted set was last
    // looked at (a new day or month lifts the scopes of the one before).
    `ALTER TABLE settings ADD COLUMN policy TEXT`,
    `ALTER TABLE settings ADD COLUMN paused_agents TEXT NOT NULL DEFAULT '[]'`,
    `ALTER TABLE settings ADD COLUMN pauses_ms INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE meta ADD COLUMN day TEXT`,
  ],
  // The tools' call counts in the counters (workspace/call-counts.ts), filled once from the meter rows held counted.
  5: CALL_COUNT_STEPS,
};

/** Brings the object's storage to {@link SCHEMA_VERSION}. Runs inside blockConcurrencyWhile. */
export function migrate(storage: DurableObjectStorage): void {
  migrateSteps(storage, STEPS, SCHEMA_VERSION);
}
