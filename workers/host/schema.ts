/** HostObject storage schema, versioned (see `lib/do-schema.ts`). */

import { migrateSteps } from "../lib/do-schema.ts";

/** Bump when a step is added below. */
export const SCHEMA_VERSION = 2;

const STEPS: Record<number, string[]> = {
  1: [
    // The host's D1 row as the object last read it (JSON), and when its last-seen time was last sent to D1.
    `CREATE TABLE host (id INTEGER PRIMARY KEY CHECK (id = 1), row TEXT NOT NULL, seen_sent_ms INTEGER NOT NULL)`,
    // Each signed request's nonce, admitted once, until its request's time window ends.
    `CREATE TABLE nonces (nonce TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL)`,
    `CREATE INDEX nonces_expiry ON nonces (expires_ms)`,
    // The host's runs (the runs-per-hour quota counts their creation), kept a week after they were last seen.
    `CREATE TABLE runs (id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, seen_ms INTEGER NOT NULL)`,
    `CREATE INDEX runs_created ON runs (created_ms)`,
    `CREATE INDEX runs_seen ON runs (seen_ms)`,
    // The host's agent names (the new-names-per-day quota counts their creation).
    `CREATE TABLE names (name TEXT PRIMARY KEY, created_ms INTEGER NOT NULL)`,
    // The host's own part of its policy (lib/host-policy.ts), as read from D1 at `read_ms`.
    `CREATE TABLE policy_part (id INTEGER PRIMARY KEY CHECK (id = 1), part TEXT NOT NULL, read_ms INTEGER NOT NULL)`,
    `CREATE INDEX names_created ON names (created_ms)`,
  ],
  2: [
    // The host's status and own policy part as its push hub was last handed them (JSON), and that copy's version.
    `CREATE TABLE hub_copy (id INTEGER PRIMARY KEY CHECK (id = 1), copy TEXT NOT NULL, version INTEGER NOT NULL)`,
  ],
};

/** Brings the object's storage to {@link SCHEMA_VERSION}. Runs inside blockConcurrencyWhile. */
export function migrate(storage: DurableObjectStorage): void {
  migrateSteps(storage, STEPS, SCHEMA_VERSION);
}
