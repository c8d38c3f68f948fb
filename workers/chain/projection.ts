import { runRow } from "../lib/run-rows.ts";
import { utcDay } from "../spend/price.ts";
import type { AgentSeen, ProjectionMessage, SpendRow } from "../projection/messages.ts";
import { spendTotals } from "./spend.ts";
import type { ChainSummary } from "./types.ts";

/** What the chain's object remembers of its fleet row's copy in D1: what it last sent, and what the batches since then said. */
interface Projected {
  /** The chain version last sent (-1: never). */
  sentVersion: number;
  sentMs: number;
  sentStatus: string | null;
  /** Server time of the last batch. */
  deliveredMs: number | null;
  /** Since when the chain has held frames beyond a hole; null: none held. */
  pendingSinceMs: number | null;
  /** The last refusal of part of a batch since the last send; null: none. */
  refusedMs: number | null;
  /** Something the D1 row does not show yet besides the version (a refusal, frames held or no longer held). */
  dirty: boolean;
}

/** The projection's table in the chain's storage (chain/schema.ts, step 7). */
export const PROJECTION_TABLE = `CREATE TABLE projection (id INTEGER PRIMARY KEY CHECK (id = 1), sent_version INTEGER NOT NULL,
  sent_ms INTEGER NOT NULL, sent_status TEXT, delivered_ms INTEGER, pending_since_ms INTEGER, refused_ms INTEGER,
  dirty INTEGER NOT NULL)`;

function load(sql: SqlStorage): Projected {
  const r = sql
    .exec<{
      sent_version: number;
      sent_ms: number;
      sent_status: string | null;
      delivered_ms: number | null;
      pending_since_ms: number | null;
      refused_ms: number | null;
      dirty: number;
    }>("SELECT * FROM projection WHERE id = 1")
    .toArray()[0];
  if (!r) return { sentVersion: -1, sentMs: 0, sentStatus: null, deliveredMs: null, pendingSinceMs: null, refusedMs: null, dirty: false };
  return {
    sentVersion: r.sent_version,
    sentMs: r.sent_ms,
    sentStatus: r.sent_status,
    deliveredMs: r.delivered_ms,
    pendingSinceMs: r.pending_since_ms,
    refusedMs: r.refused_ms,
    dirty: r.dirty === 1,
  };
}

function save(sql: SqlStorage, p: Projected): void {
  sql.exec(
    `INSERT OR REPLACE INTO projection (id, sent_version, sent_ms, sent_status, delivered_ms, pending_since_ms, refused_ms, dirty)
     VALUES (1, ?, ?, ?, ?, ?, ?, ?)`,
    p.sentVersion,
    p.sentMs,
    p.sentStatus,
    p.deliveredMs,
    p.pendingSinceMs,
    p.refusedMs,
    p.dirty ? 1 : 0,
  );
}

/** Notes what one batch said of the agent: delivered now, frames held beyond a hole or not, part of it refused or not. */
export function noteBatch(sql: SqlStorage, now: number, held: boolean, refused: boolean): void {
  const p = load(sql);
  if (refused || held !== (p.pendingSinceMs !== null)) p.dirty = true;
  p.deliveredMs = now;
  p.pendingSinceMs = held ? (p.pendingSinceMs ?? now) : null;
  if (refused) p.refusedMs = now;
  save(sql, p);
}

/**
 * When the chain's row is next due in D1: now, when it was never sent or its status changed (a
 * run that ends shows as ended at once); `sentMs + coalesceMs` for any other change (a live run's
 * counts move with every batch, and are sent at most once per window); null when D1 holds this
 * version already.
 */
export function projectionDue(sql: SqlStorage, s: ChainSummary, coalesceMs: number): number | null {
  const p = load(sql);
  if (p.sentVersion >= s.version && !p.dirty) return null;
  if (p.sentVersion < 0 || p.sentStatus !== s.status) return 0;
  return p.sentMs + coalesceMs;
}

/** The projection message of the chain's current state. */
export function projectionMessage(sql: SqlStorage, s: ChainSummary, now: number): ProjectionMessage {
  const p = load(sql);
  const run = s.kind === "run" ? runRow(s, now) : null;
  const agent: AgentSeen | null =
    s.kind === "run" && s.harness && p.deliveredMs !== null
      ? {
          hostId: s.hostId,
          name: s.harness,
          workspaceId: s.workspace,
          deliveredMs: p.deliveredMs,
          pendingSinceMs: p.pendingSinceMs,
          refusedMs: p.refusedMs,
        }
      : null;
  // Spend is added only on the day the server receives a call: only the days since the last send can have changed.
  const since = p.sentVersion < 0 ? "" : utcDay(p.sentMs);
  const spend: SpendRow[] = spendTotals(sql, undefined, since).map((t) => ({
    runId: s.chain,
    day: t.day,
    vendor: t.vendor,
    model: t.model,
    priceVersion: t.priceVersion,
    workspaceId: s.workspace,
    hostId: s.hostId,
    agent: s.kind === "run" ? s.harness : null,
    calls: t.calls,
    unpricedCalls: t.unpricedCalls,
    microusd: t.microusd,
    inputTokens: t.inputTokens,
    outputTokens: t.outputTokens,
    cacheReadTokens: t.cacheReadTokens,
    cacheWriteTokens: t.cacheWriteTokens,
    version: s.version,
  }));
  return { kind: "chain", chain: s.chain, version: s.version, run, agent, spend };
}

/** Notes that the chain's state of `version` (and `status`) reached the queue at `now`. */
export function noteSent(sql: SqlStorage, version: number, status: string, now: number): void {
  const p = load(sql);
  if (version < p.sentVersion) return;
  p.sentVersion = version;
  p.sentMs = now;
  p.sentStatus = status;
  p.refusedMs = null;
  p.dirty = false;
  save(sql, p);
}
