import type { BudgetClause } from "../../protocol/index.ts";
import { prune } from "./counters.ts";
import {
  addLease,
  budgetUse,
  type ClauseUse,
  changeLease,
  crossedLimit,
  dropLease,
  type ExhaustedScope,
  allExhaustedScopes,
  exhaustedScopes,
  expireLeases,
  leaseDay,
  leaseOf,
  leaseRoom,
  type RunSpend,
  takeSpend,
  type UseFilter,
} from "./budgets.ts";
import type { Moved } from "./counters.ts";
import { type CallEnd, type MeterCall, type ReserveAnswer, reserveCall, settleCall, type ToolCallRules } from "./tool-meter.ts";

/** A lease of budget (see {@link BudgetLedger.lease}). */
export type LeaseAnswer =
  | { granted: true; lease_id: string; microusd: number; expires_ms: number; room_microusd: number | null; changed: boolean }
  | { granted: false; exhausted: ExhaustedScope; room_microusd: number };

/** A resized lease (see {@link BudgetLedger.resize}): a lease answer, or gone (unknown, expired, another host's). */
export type ResizeAnswer = LeaseAnswer | { granted: false; gone: true };

/** Whether the set of exhausted scopes changed, and when it last did (a host policy's `issued_ms` is at least that). */
export interface Change {
  changed: boolean;
  changedMs: number;
}

/** The room a refused lease's scope has without the amount asked (the scope's use counted it). */
function roomWithout(over: ExhaustedScope, asked: number): number {
  return Math.max(0, over.limit_microusd - (over.spent_microusd - asked));
}

/**
 * A workspace's budget counters and leases over its object's SQLite storage, against the budget
 * clauses of its policy. Every method is synchronous and runs inside one `transactionSync` of the
 * object: one writer, so two leases never both take the last of a budget. Each costs a few
 * counters per clause or per lease, never a scan of the month's spend.
 */
export class BudgetLedger {
  readonly #sql: SqlStorage;
  readonly #clauses: BudgetClause[];

  constructor(sql: SqlStorage, clauses: BudgetClause[]) {
    this.#sql = sql;
    this.#clauses = clauses;
  }

  /** Takes runs' day totals (only what a total grew by is counted). */
  report(rows: RunSpend[], now: number): Change {
    const moved = [...this.#housekeep(now), ...takeSpend(this.#sql, rows, now)];
    return this.#change(moved, now);
  }

  /** The exhausted scopes that concern one host (the workspace's, its own, its runs'). */
  exhausted(hostId: string, now: number): { scopes: ExhaustedScope[]; changedMs: number } {
    const { changedMs } = this.#change(this.#housekeep(now), now);
    return { scopes: exhaustedScopes(this.#sql, this.#clauses, now, hostId), changedMs };
  }

  /** Every host's exhausted scopes, for a workspace-wide push (see `budgets.ts` allExhaustedScopes). */
  allExhausted(now: number): { scopes: ExhaustedScope[]; changedMs: number; complete: boolean } {
    const { changedMs } = this.#change(this.#housekeep(now), now);
    return { ...allExhaustedScopes(this.#sql, this.#clauses, now), changedMs };
  }

  /** Each clause's use in its current window (see `budgets.ts` budgetUse). */
  use(now: number, filter: UseFilter): ClauseUse[] {
    this.#change(this.#housekeep(now), now);
    return budgetUse(this.#sql, this.#clauses, now, filter);
  }

  /**
   * Leases budget for calls not yet priced: `microusd` is held as spent for the run, its host and
   * the workspace until the lease is settled or expires. Refused, with the scope, when it would
   * take any clause of the run's scopes past its limit.
   */
  lease(req: { hostId: string; runId: string; microusd: number; ttlMs: number }, now: number): LeaseAnswer {
    const moved = this.#housekeep(now);
    const lease = {
      id: `lease_${crypto.randomUUID().replaceAll("-", "")}`,
      host_id: req.hostId,
      run_id: req.runId,
      day: leaseDay(now),
      microusd: req.microusd,
      expires_ms: now + req.ttlMs,
    };
    const added = addLease(this.#sql, lease, now);
    const { over, room } = leaseRoom(this.#sql, this.#clauses, now, req.hostId, req.runId);
    if (over) {
      dropLease(this.#sql, lease, now);
      this.#change(moved, now);
      return { granted: false, exhausted: over, room_microusd: roomWithout(over, req.microusd) };
    }
    const { changed } = this.#change([...moved, ...added], now);
    return { granted: true, lease_id: lease.id, microusd: lease.microusd, expires_ms: lease.expires_ms, room_microusd: room, changed };
  }

  /**
   * Changes a lease's amount by `addMicrousd` (never below 0) and its expiry to `now + ttlMs`.
   * Growing is refused like a new lease (the lease stays as it was); shrinking is always granted.
   * Gone for a lease that is unknown, expired or another host's.
   */
  resize(req: { hostId: string; leaseId: string; addMicrousd: number; ttlMs: number }, now: number): ResizeAnswer {
    const moved = this.#housekeep(now);
    const held = leaseOf(this.#sql, req.leaseId, now, req.hostId);
    if (!held) return { granted: false, gone: true };
    const microusd = Math.max(0, held.microusd + req.addMicrousd);
    // A lease renewed past UTC midnight holds its calls in the new day's (and month's) window.
    const next = { microusd, expires_ms: now + req.ttlMs, day: leaseDay(now) };
    const changed = changeLease(this.#sql, held, next, now);
    const { over, room } = leaseRoom(this.#sql, this.#clauses, now, req.hostId, held.run_id);
    if (microusd > held.microusd && over) {
      changeLease(this.#sql, { ...held, ...next }, held, now);
      this.#change(moved, now);
      return { granted: false, exhausted: over, room_microusd: roomWithout(over, microusd - held.microusd) };
    }
    const change = this.#change([...moved, ...changed], now);
    return { granted: true, lease_id: req.leaseId, microusd, expires_ms: next.expires_ms, room_microusd: room, changed: change.changed };
  }

  /** Ends a lease (its calls are priced from the record as they arrive); unknown or expired leases, or another host's, are a no-op. */
  settle(leaseId: string, now: number, hostId?: string): Change {
    const moved = this.#housekeep(now);
    const held = leaseOf(this.#sql, leaseId, now, hostId);
    if (held) moved.push(...dropLease(this.#sql, held, now));
    return this.#change(moved, now);
  }

  /**
   * Reserves a tool call before it is forwarded (`tool-meter.ts`): its cost is reserved in the
   * same counters as a lease, against the same clauses; `changed` as for a lease.
   */
  reserveTool(call: MeterCall, rules: ToolCallRules, now: number): ReserveAnswer {
    const moved = this.#housekeep(now);
    const { answer, moved: reserved } = reserveCall(this.#sql, call, rules, this.#clauses, now);
    const { changed } = this.#change([...moved, ...reserved], now);
    return answer.granted ? { granted: true, changed } : answer;
  }

  /** Settles a reserved tool call: its cost spent when it was forwarded, given back when not. */
  settleTool(end: CallEnd, now: number): Change {
    const moved = this.#housekeep(now);
    return this.#change([...moved, ...settleCall(this.#sql, end, now)], now);
  }

  /** Marks the exhausted set changed (the clauses did). */
  clausesChanged(now: number): void {
    this.#bump(now);
  }

  // Expired leases give back what they held; a bounded step of old counters goes.
  #housekeep(now: number): Moved[] {
    const moved = expireLeases(this.#sql, now);
    prune(this.#sql, now);
    return moved;
  }

  /**
   * Whether the exhausted set changed: a counter crossed a clause's limit (either way), or the
   * UTC day turned (the day's and the month's windows started again). Constant cost.
   */
  #change(moved: Moved[], now: number): Change {
    const meta = this.#sql.exec<{ changed_ms: number; day: string | null }>("SELECT changed_ms, day FROM meta WHERE id = 1").toArray()[0];
    const day = leaseDay(now);
    const turned = meta !== undefined && meta.day !== day && this.#clauses.some((c) => c.window !== "run");
    if (!turned && !crossedLimit(this.#clauses, moved, now)) {
      if (!meta) this.#sql.exec("INSERT INTO meta (id, changed_ms, exhausted, day) VALUES (1, 0, '', ?)", day);
      else if (meta.day !== day) this.#sql.exec("UPDATE meta SET day = ? WHERE id = 1", day);
      return { changed: false, changedMs: meta?.changed_ms ?? 0 };
    }
    return { changed: true, changedMs: this.#bump(now) };
  }

  #bump(now: number): number {
    const meta = this.#sql.exec<{ changed_ms: number }>("SELECT changed_ms FROM meta WHERE id = 1").toArray()[0];
    const changedMs = Math.max(now, (meta?.changed_ms ?? 0) + 1);
    this.#sql.exec("INSERT OR REPLACE INTO meta (id, changed_ms, exhausted, day) VALUES (1, ?, '', ?)", changedMs, leaseDay(now));
    return changedMs;
  }
}
