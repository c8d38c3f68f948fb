/** PushHubObject storage schema, versioned (see `lib/do-schema.ts`). */

import { migrateSteps } from "../lib/do-schema.ts";

/** Bump when a step is added below. */
export const SCHEMA_VERSION = 1;

const STEPS: Record<number, string[]> = {
  1: [
    // Each host's status and own policy part (JSON) as its HostObject last handed them, and that copy's version.
    `CREATE TABLE copies (host TEXT PRIMARY KEY, copy TEXT NOT NULL, version INTEGER NOT NULL)`,
  ],
};

/** Brings the object's storage to {@link SCHEMA_VERSION}. Runs inside blockConcurrencyWhile. */
export function migrate(storage: DurableObjectStorage): void {
  migrateSteps(storage, STEPS, SCHEMA_VERSION);
}
