/** WorkspaceObject storage schema, versioned (see `lib/do-schema.ts`). */

import { migrateSteps } from "../lib/do-schema.ts";
import { TOOL_METER_STEP } from "./tool-meter.ts";

/** Bump when a step is added below. */
export const SCHEMA_VERSION = 2;

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
};

/** Brings the object's storage to {@link SCHEMA_VERSION}. Runs inside blockConcurrencyWhile. */
export function migrate(storage: DurableObjectStorage): void {
  migrateSteps(storage, STEPS, SCHEMA_VERSION);
}
