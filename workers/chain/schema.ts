/** ChainObject storage schema, versioned (see `lib/do-schema.ts`). */

import { migrateSteps } from "../lib/do-schema.ts";

/** Bump when a step is added below. */
export const SCHEMA_VERSION = 6;

const STEPS: Record<number, string[]> = {
  1: [
    // v1 was the stub's table; kept so an object created by it migrates forward.
    `CREATE TABLE IF NOT EXISTS frames (seq INTEGER PRIMARY KEY, t INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, hash TEXT NOT NULL, received_ms INTEGER NOT NULL)`,
  ],
  2: [
    // flags: 1 = matters to the chain's own gaps (telemetry_gap, agent_stop, a body not kept).
    `ALTER TABLE frames ADD COLUMN flags INTEGER NOT NULL DEFAULT 0`,
    `CREATE TABLE state (id INTEGER PRIMARY KEY CHECK (id = 1), chain TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('run','host')),
      workspace TEXT NOT NULL, host_id TEXT NOT NULL, host_key TEXT NOT NULL, harness TEXT, agent TEXT, session_id TEXT,
      mode TEXT NOT NULL, status TEXT NOT NULL, outcome TEXT, count INTEGER NOT NULL, head TEXT NOT NULL,
      lock_next INTEGER NOT NULL, last_lock TEXT, locked_count INTEGER NOT NULL, final INTEGER NOT NULL, sealed INTEGER NOT NULL,
      first_ms INTEGER, last_ms INTEGER, last_received_ms INTEGER, spend INTEGER NOT NULL, facts TEXT NOT NULL, version INTEGER NOT NULL)`,
    `CREATE TABLE held (seq INTEGER PRIMARY KEY, t INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, received_ms INTEGER NOT NULL)`,
    `CREATE TABLE locks (lock_seq INTEGER PRIMARY KEY, payload TEXT NOT NULL, sig TEXT NOT NULL, count INTEGER NOT NULL, final INTEGER NOT NULL, received_ms INTEGER NOT NULL)`,
    `CREATE TABLE equivocations (id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT NOT NULL CHECK (what IN ('frame','lock')), seq INTEGER NOT NULL, evidence TEXT NOT NULL, received_ms INTEGER NOT NULL, UNIQUE (what, seq, evidence))`,
    `CREATE TABLE gaps (id INTEGER PRIMARY KEY AUTOINCREMENT, gap TEXT NOT NULL UNIQUE, created_ms INTEGER NOT NULL)`,
    `CREATE TABLE bodies (sha256 TEXT PRIMARY KEY, received_ms INTEGER NOT NULL)`,
    `CREATE TABLE bench (seq INTEGER PRIMARY KEY, t INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, hash TEXT NOT NULL, received_ms INTEGER NOT NULL)`,
  ],
  3: [
    // A host chain's object also admits its host's request nonces, each once, until its time window ends.
    `CREATE TABLE nonces (nonce TEXT PRIMARY KEY, expires_ms INTEGER NOT NULL)`,
    `CREATE INDEX nonces_expiry ON nonces (expires_ms)`,
    // 1 once the computer ended the session: an agent_stop arrived, stored or refused after a seal.
    `ALTER TABLE state ADD COLUMN host_stopped INTEGER NOT NULL DEFAULT 0`,
    // 1 once the chain's first lock fixed the host key its locks are checked with (a chain with a lock already has).
    `ALTER TABLE state ADD COLUMN key_pinned INTEGER NOT NULL DEFAULT 0`,
    `UPDATE state SET key_pinned = 1 WHERE lock_next > 0`,
  ],
  4: [
    // The ingest bench's floor table; the floor now runs in its own Worker (scripts/bench/worker/).
    `DROP TABLE IF EXISTS bench`,
  ],
  5: [
    // Each llm_call priced once as it is appended, totalled per UTC day (server receipt), vendor,
    // model and price table version ('' for calls the table does not know: unpriced, never $0).
    `CREATE TABLE spend (day TEXT NOT NULL, vendor TEXT NOT NULL, model TEXT NOT NULL, price_version TEXT NOT NULL,
      calls INTEGER NOT NULL, unpriced_calls INTEGER NOT NULL, microusd INTEGER NOT NULL, input_tokens INTEGER NOT NULL,
      output_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL,
      PRIMARY KEY (day, vendor, model, price_version))`,
  ],
  6: [
    // What the frames say of the run's outcome so far (chain/outcome.ts), folded as they are appended.
    // An object from before has no row: its first read folds its stored frames once.
    `CREATE TABLE reading (id INTEGER PRIMARY KEY CHECK (id = 1), reading TEXT NOT NULL)`,
  ],
};

/** Brings the object's storage to {@link SCHEMA_VERSION}. Runs inside blockConcurrencyWhile. */
export function migrate(storage: DurableObjectStorage): void {
  migrateSteps(storage, STEPS, SCHEMA_VERSION);
}
