/**
 * The tool-call meter log and its budget accounting, in the workspace's object (one writer): a
 * call is reserved before it is forwarded (its cost reserved in the budget counters, as a lease
 * is, its call counted against each call-count limit) and settled after (the cost spent when it
 * was forwarded, given back when not), in one transaction each, so N concurrent calls admit
 * exactly what fits. The rows are the meter log outside the run's chain (`GET /v1/tool-calls`).
 */
import { type BudgetClause, budgetReason, formatUsd, sha256Hex } from "../../protocol/index.ts";
import { utcDay } from "../spend/price.ts";
import type { CallLimit } from "../tools/schema.ts";
import { type ExhaustedScope, overLimit } from "./budgets.ts";
import { callsCounted, countCall } from "./call-counts.ts";
import { addToCounters, type Moved, type SpendKey, USD } from "./counters.ts";

/** The WorkspaceObject schema step that adds the meter log. */
export const TOOL_METER_STEP = [
  // One row per tools/call: refused, reserved (forwarded, not yet settled), ok, error, cancelled,
  // or lost (reserved and never settled: its cost and its count stay, fail closed).
  `CREATE TABLE tool_calls (id TEXT PRIMARY KEY, ts_ms INTEGER NOT NULL, day TEXT NOT NULL, tool TEXT NOT NULL,
    def_sha256 TEXT NOT NULL, caller TEXT NOT NULL, host_id TEXT, agent TEXT, run_id TEXT, token_id TEXT,
    status TEXT NOT NULL, rule TEXT, reason TEXT, reason_sha256 TEXT, duration_ms INTEGER,
    input_sha256 TEXT NOT NULL, input_size INTEGER NOT NULL, output_sha256 TEXT, output_size INTEGER,
    cost_microusd INTEGER NOT NULL DEFAULT 0, counted INTEGER NOT NULL DEFAULT 0, upstream_status INTEGER,
    scrubbed INTEGER NOT NULL DEFAULT 0, settled_ms INTEGER)`,
  `CREATE INDEX tool_calls_time ON tool_calls (ts_ms)`,
  `CREATE INDEX tool_calls_tool ON tool_calls (tool, ts_ms)`,
  `CREATE INDEX tool_calls_run ON tool_calls (run_id, ts_ms)`,
  `CREATE INDEX tool_calls_status ON tool_calls (status, ts_ms)`,
  `CREATE INDEX tool_calls_day ON tool_calls (day)`,
];

/** How long a reserved call may stay unsettled before it is marked lost (past the longest call). */
export const RESERVED_LOST_MS = 3 * 60_000;
/** How long meter rows are kept (a run-window budget counts a run's tool charges of this long). */
export const TOOL_CALL_RETENTION_MS = 90 * 24 * 60 * 60_000;

/** Who made a call, as the meter log names them. */
export interface MeterCaller {
  caller: "gateway" | "direct";
  hostId: string | null;
  agent: string | null;
  runId: string | null;
  tokenId: string | null;
}

/** A call as it arrives at the meter: before it is decided. */
export interface MeterCall extends MeterCaller {
  id: string;
  tool: string;
  defSha256: string;
  inputSha256: string;
  inputSize: number;
}

/** A meter row, as `GET /v1/tool-calls` answers it. */
export interface ToolCallRow {
  id: string;
  ts_ms: number;
  tool: string;
  def_sha256: string;
  caller: "gateway" | "direct";
  host_id: string | null;
  agent: string | null;
  run_id: string | null;
  token_id: string | null;
  status: "refused" | "reserved" | "ok" | "error" | "cancelled" | "lost";
  rule: string | null;
  reason: string | null;
  reason_sha256: string | null;
  duration_ms: number | null;
  input_sha256: string;
  input_size: number;
  output_sha256: string | null;
  output_size: number | null;
  cost_microusd: number;
  upstream_status: number | null;
  scrubbed: number;
}

/** What a tool call is charged and counted against: its cost and its call-count limits (the budgets are the workspace's). */
export interface ToolCallRules {
  costMicrousd: number;
  limits: CallLimit[];
}

// The counters a call's cost moves: its run's, its host's (none for a direct client) and the workspace's, on the day it was made.
const keyOf = (r: { run_id: string | null; host_id: string | null; day: string }): SpendKey => ({
  runId: r.run_id ?? "",
  hostId: r.host_id ?? "",
  day: r.day,
});

/** A reserved call's cost moved: spent (forwarded, or lost: fail closed) or given back. */
function release(
  sql: SqlStorage,
  r: { run_id: string | null; host_id: string | null; day: string; cost_microusd: number },
  spent: boolean,
  now: number,
) {
  return addToCounters(sql, USD, keyOf(r), spent ? r.cost_microusd : 0, -r.cost_microusd, now);
}

type Reserved = { id: string; run_id: string | null; host_id: string | null; day: string; cost_microusd: number };

/** Marks calls reserved too long lost (a bounded step, the oldest first): their cost counts as spent. */
function markLost(sql: SqlStorage, now: number): Moved[] {
  const lost = sql
    .exec<Reserved>(
      "SELECT id, run_id, host_id, day, cost_microusd FROM tool_calls WHERE status = 'reserved' AND ts_ms < ? ORDER BY ts_ms LIMIT 100",
      now - RESERVED_LOST_MS,
    )
    .toArray();
  return lost.flatMap((r) => {
    sql.exec("UPDATE tool_calls SET status = 'lost' WHERE id = ?", r.id);
    return release(sql, r, true, now);
  });
}

/** A refusal the meter itself decides: a call-count limit or a budget. */
export type ReserveAnswer =
  | { granted: true; changed: boolean }
  | { granted: false; rule: string; reason: string; exhausted?: ExhaustedScope };

const WINDOW_WORDS = { hour: "this hour (UTC)", day: "today (UTC)", month: "this month (UTC)", run: "this run" } as const;

/** The first call-count limit one more call of `c` would pass, with the sentence a refusal gives: one counter read per limit. */
function limitPassed(sql: SqlStorage, c: MeterCall, limits: CallLimit[], now: number): { rule: string; reason: string } | null {
  for (const l of limits) {
    // A scope the call has no instance of (a direct client's host, a call with no run) counts the calls that have none either.
    const n = callsCounted(sql, c, l, now);
    if (n + 1 > l.max_calls) {
      const scope =
        l.scope === "workspace" ? "the workspace" : l.scope === "host" ? "this computer" : l.scope === "agent" ? "this agent" : "this run";
      return {
        rule: l.id,
        reason: `call limit reached: ${l.id} allows ${l.max_calls} calls of ${c.tool} for ${scope} ${WINDOW_WORDS[l.window]}, and ${n} were made`,
      };
    }
  }
  return null;
}

function insert(sql: SqlStorage, c: MeterCall, now: number, status: "refused" | "reserved", extra: Record<string, SqlStorageValue>) {
  const cols: Record<string, SqlStorageValue> = {
    id: c.id,
    ts_ms: now,
    day: utcDay(now),
    tool: c.tool,
    def_sha256: c.defSha256,
    caller: c.caller,
    host_id: c.hostId,
    agent: c.agent,
    run_id: c.runId,
    token_id: c.tokenId,
    status,
    input_sha256: c.inputSha256,
    input_size: c.inputSize,
    ...extra,
  };
  const names = Object.keys(cols);
  sql.exec(`INSERT INTO tool_calls (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`, ...Object.values(cols));
}

/** Writes a refused call's row (it was never forwarded: no cost, not counted). */
export function meterRefusal(
  sql: SqlStorage,
  c: MeterCall,
  refusal: { rule: string; reason: string; reasonSha256: string },
  now: number,
): void {
  insert(sql, c, now, "refused", { rule: refusal.rule, reason: refusal.reason, reason_sha256: refusal.reasonSha256, settled_ms: now });
}

/**
 * Reserves a call: refused (and its row written as refused) when one more call would pass a
 * call-count limit, or its cost would take a budget scope of its run, host or the workspace past
 * its limit (model leases, priced spend and other calls' charges counted alike, {@link overLimit});
 * else its row is written reserved, counted, and its cost reserved in the counters. Run inside the
 * object's transaction; answers the counters it moved.
 */
export function reserveCall(
  sql: SqlStorage,
  c: MeterCall,
  rules: ToolCallRules,
  budgets: BudgetClause[],
  now: number,
): { answer: ReserveAnswer; moved: Moved[] } {
  const moved = markLost(sql, now);
  const passed = limitPassed(sql, c, rules.limits, now);
  if (passed) {
    meterRefusal(sql, c, { ...passed, reasonSha256: sha256Hex(passed.reason) }, now);
    return { answer: { granted: false, ...passed }, moved };
  }
  insert(sql, c, now, "reserved", { cost_microusd: rules.costMicrousd, counted: 1 });
  const granted = () => {
    countCall(sql, c, 1, now, now);
    return { answer: { granted: true, changed: false } as const, moved };
  };
  if (rules.costMicrousd > 0) {
    const row = { run_id: c.runId, host_id: c.hostId, day: utcDay(now), cost_microusd: rules.costMicrousd };
    const added = addToCounters(sql, USD, keyOf(row), 0, rules.costMicrousd, now);
    const over = overLimit(sql, budgets, now, c.hostId ?? "", c.runId ?? "");
    if (over) {
      release(sql, row, false, now);
      sql.exec("DELETE FROM tool_calls WHERE id = ?", c.id);
      const { host: _h, ...before } = { ...over, spent_microusd: over.spent_microusd - rules.costMicrousd };
      const reason = `${budgetReason(before)}; this call costs ${formatUsd(rules.costMicrousd)}`;
      meterRefusal(sql, c, { rule: "budget", reason, reasonSha256: sha256Hex(reason) }, now);
      return { answer: { granted: false, rule: "budget", reason, exhausted: over }, moved };
    }
    moved.push(...added);
  }
  return granted();
}

/** How a forwarded call ended. */
export interface CallEnd {
  id: string;
  /** `refused`: found not to be the approved tool on use (`rule` and `reason` say why); never forwarded. */
  status: "ok" | "error" | "cancelled" | "refused";
  rule?: string;
  reason?: string;
  /** False when the call never reached its upstream (refused by the egress check, no credential): then it costs nothing and is not counted. */
  forwarded: boolean;
  durationMs: number;
  outputSha256: string | null;
  outputSize: number | null;
  upstreamStatus: number | null;
  scrubbed: boolean;
}

/**
 * Settles a reserved call (a call already settled or lost stays as it is): its cost spent when it
 * was forwarded, given back when not. Drops rows past retention (the counters keep their totals).
 * Answers the counters it moved.
 */
export function settleCall(sql: SqlStorage, end: CallEnd, now: number): Moved[] {
  const held = sql
    .exec<Reserved & { tool: string; agent: string | null; ts_ms: number }>(
      "SELECT id, run_id, host_id, day, cost_microusd, tool, agent, ts_ms FROM tool_calls WHERE id = ? AND status = 'reserved'",
      end.id,
    )
    .toArray()[0];
  // A call that never reached its upstream is not counted against its limits.
  if (held && !end.forwarded)
    countCall(sql, { tool: held.tool, hostId: held.host_id, agent: held.agent, runId: held.run_id }, -1, held.ts_ms, now);
  sql.exec(
    `UPDATE tool_calls SET status = ?, rule = ?, reason = ?, reason_sha256 = ?, duration_ms = ?, output_sha256 = ?,
       output_size = ?, upstream_status = ?, scrubbed = ?, cost_microusd = CASE WHEN ? THEN cost_microusd ELSE 0 END,
       counted = ?, settled_ms = ?
     WHERE id = ? AND status = 'reserved'`,
    end.status,
    end.rule ?? null,
    end.reason ?? null,
    end.reason === undefined ? null : sha256Hex(end.reason),
    end.durationMs,
    end.outputSha256,
    end.outputSize,
    end.upstreamStatus,
    end.scrubbed ? 1 : 0,
    end.forwarded ? 1 : 0,
    end.forwarded ? 1 : 0,
    now,
    end.id,
  );
  sql.exec(
    "DELETE FROM tool_calls WHERE id IN (SELECT id FROM tool_calls WHERE ts_ms < ? ORDER BY ts_ms LIMIT 100)",
    now - TOOL_CALL_RETENTION_MS,
  );
  return held && held.cost_microusd > 0 ? release(sql, held, end.forwarded, now) : [];
}

/** Which meter rows {@link toolCallRows} answers: newest first, before the call id `before`. */
export interface ToolCallFilter {
  tool?: string;
  status?: ToolCallRow["status"];
  run?: string;
  host?: string;
  agent?: string;
  caller?: "gateway" | "direct";
  since_ms?: number;
  before?: string;
  limit: number;
}

/** Meter rows matching a filter, newest first (ids sort by time). */
export function toolCallRows(sql: SqlStorage, f: ToolCallFilter): ToolCallRow[] {
  const where: string[] = [];
  const args: SqlStorageValue[] = [];
  const eq = (col: string, v: string | undefined) => {
    if (v === undefined) return;
    where.push(`${col} = ?`);
    args.push(v);
  };
  eq("tool", f.tool);
  eq("status", f.status);
  eq("run_id", f.run);
  eq("host_id", f.host);
  eq("agent", f.agent);
  eq("caller", f.caller);
  if (f.since_ms !== undefined) {
    where.push("ts_ms >= ?");
    args.push(f.since_ms);
  }
  if (f.before !== undefined) {
    where.push("id < ?");
    args.push(f.before);
  }
  const cols =
    "id, ts_ms, tool, def_sha256, caller, host_id, agent, run_id, token_id, status, rule, reason, reason_sha256, duration_ms, input_sha256, input_size, output_sha256, output_size, cost_microusd, upstream_status, scrubbed";
  return sql
    .exec<ToolCallRow & Record<string, SqlStorageValue>>(
      `SELECT ${cols} FROM tool_calls ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC LIMIT ?`,
      ...args,
      f.limit,
    )
    .toArray();
}

/** Per tool since `sinceMs`: its calls, refusals, errors and charges. */
export interface ToolUse {
  tool: string;
  calls: number;
  refused: number;
  errors: number;
  spent_microusd: number;
}

/** {@link ToolUse} of every tool with a call since `sinceMs`. */
export function toolUse(sql: SqlStorage, sinceMs: number): ToolUse[] {
  return sql
    .exec<ToolUse & Record<string, SqlStorageValue>>(
      `SELECT tool, count(*) AS calls, sum(status = 'refused') AS refused, sum(status IN ('error', 'lost')) AS errors,
         sum(cost_microusd) AS spent_microusd FROM tool_calls WHERE ts_ms >= ? GROUP BY tool ORDER BY tool`,
      sinceMs,
    )
    .toArray();
}
