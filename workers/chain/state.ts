import { bytesToHex, type CoverageFacts, emptyCoverage, emptyHead } from "../../protocol/index.ts";
import type { ChainInit, RunStatus } from "./types.ts";

/** The single `state` row of a ChainObject, as held in memory while a call runs. */
export interface ChainState extends Omit<ChainInit, "hostKeys"> {
  status: RunStatus;
  outcome: string | null;
  count: number;
  head: string;
  lockNext: number;
  lastLock: string | null;
  lockedCount: number;
  final: boolean;
  sealed: boolean;
  /** The chain's first lock fixed `hostKey`: the key every lock of the chain is checked with. */
  keyPinned: boolean;
  /** The computer ended the session: an agent_stop arrived, stored or refused after a seal. */
  hostStopped: boolean;
  firstMs: number | null;
  lastMs: number | null;
  lastReceivedMs: number | null;
  spend: number;
  facts: CoverageFacts;
  version: number;
}

interface StateRow extends Record<string, SqlStorageValue> {
  chain: string;
  kind: string;
  workspace: string;
  host_id: string;
  host_key: string;
  harness: string | null;
  agent: string | null;
  session_id: string | null;
  mode: string;
  status: string;
  outcome: string | null;
  count: number;
  head: string;
  lock_next: number;
  last_lock: string | null;
  locked_count: number;
  final: number;
  sealed: number;
  key_pinned: number;
  host_stopped: number;
  first_ms: number | null;
  last_ms: number | null;
  last_received_ms: number | null;
  spend: number;
  facts: string;
  version: number;
}

/** The state of a chain that holds nothing yet. */
export function newState(init: ChainInit): ChainState {
  return {
    chain: init.chain,
    kind: init.kind,
    workspace: init.workspace,
    hostId: init.hostId,
    hostKey: init.hostKey,
    harness: init.harness,
    agent: init.agent,
    sessionId: init.sessionId,
    mode: init.mode,
    status: "live",
    outcome: null,
    count: 0,
    head: bytesToHex(emptyHead(init.chain).head),
    lockNext: 0,
    lastLock: null,
    lockedCount: 0,
    final: false,
    sealed: false,
    keyPinned: false,
    hostStopped: false,
    firstMs: null,
    lastMs: null,
    lastReceivedMs: null,
    spend: 0,
    facts: emptyCoverage(),
    version: 0,
  };
}

/** Reads the state row, or null for an object that was never written. */
export function loadState(sql: SqlStorage): ChainState | null {
  const row = sql.exec<StateRow>("SELECT * FROM state WHERE id = 1").toArray()[0];
  if (!row) return null;
  return {
    chain: row.chain,
    kind: row.kind as ChainState["kind"],
    workspace: row.workspace,
    hostId: row.host_id,
    hostKey: row.host_key,
    harness: row.harness,
    agent: row.agent,
    sessionId: row.session_id,
    mode: row.mode as ChainState["mode"],
    status: row.status as RunStatus,
    outcome: row.outcome,
    count: row.count,
    head: row.head,
    lockNext: row.lock_next,
    lastLock: row.last_lock,
    lockedCount: row.locked_count,
    final: row.final === 1,
    sealed: row.sealed === 1,
    keyPinned: row.key_pinned === 1,
    hostStopped: row.host_stopped === 1,
    firstMs: row.first_ms,
    lastMs: row.last_ms,
    lastReceivedMs: row.last_received_ms,
    spend: row.spend,
    facts: JSON.parse(row.facts) as CoverageFacts,
    version: row.version,
  };
}

/** Writes the state row (insert or replace). */
export function saveState(sql: SqlStorage, s: ChainState): void {
  sql.exec(
    `INSERT OR REPLACE INTO state (id, chain, kind, workspace, host_id, host_key, harness, agent, session_id, mode, status, outcome,
      count, head, lock_next, last_lock, locked_count, final, sealed, key_pinned, host_stopped, first_ms, last_ms, last_received_ms,
      spend, facts, version)
     VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    s.chain,
    s.kind,
    s.workspace,
    s.hostId,
    s.hostKey,
    s.harness,
    s.agent,
    s.sessionId,
    s.mode,
    s.status,
    s.outcome,
    s.count,
    s.head,
    s.lockNext,
    s.lastLock,
    s.lockedCount,
    s.final ? 1 : 0,
    s.sealed ? 1 : 0,
    s.keyPinned ? 1 : 0,
    s.hostStopped ? 1 : 0,
    s.firstMs,
    s.lastMs,
    s.lastReceivedMs,
    s.spend,
    JSON.stringify(s.facts),
    s.version,
  );
}
