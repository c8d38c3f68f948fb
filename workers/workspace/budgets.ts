import type { BudgetClause, ExhaustedBudget } from "../../protocol/index.ts";
import { utcDay } from "../spend/price.ts";
import { addSpend, addToCounters, type CounterScope, counter, type Moved, periodAt, type SpendKey, USD } from "./counters.ts";

/** One run's spend total of one UTC day, as its ChainObject counts it. */
export interface RunSpend {
  runId: string;
  hostId: string;
  day: string;
  microusd: number;
}

/** An exhausted scope, with the host it concerns (null: every host of the workspace). */
export interface ExhaustedScope extends ExhaustedBudget {
  host: string | null;
}

/** When a clause's window ends (null: the run's lifetime). */
function windowEnd(window: BudgetClause["window"], now: number): number | null {
  const d = new Date(now);
  if (window === "day") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
  if (window === "month") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return null;
}

/** The counters a clause is checked against: per run when its scope or its window is a run's, else per host or once. */
function counterScope(c: BudgetClause): CounterScope {
  return c.scope === "run" || c.window === "run" ? "run" : c.scope;
}

/** One scope instance's spend in a clause's current window (the workspace, a host, or a run). */
export interface ScopeUse {
  /** The host it concerns (null: every host of the workspace). */
  host: string | null;
  /** The run, when the clause's scope or window is `run`. */
  run?: string;
  /** Priced calls plus the budget leased and not yet settled, in millionths of a US dollar. */
  spent_microusd: number;
  /** The part of `spent_microusd` that leases hold for calls not priced yet (reserved, not spent). */
  reserved_microusd: number;
}

/** A clause's use: its scope instances' spend against its limit in the window that holds `now`. */
export interface ClauseUse {
  budget: string;
  scope: BudgetClause["scope"];
  window: BudgetClause["window"];
  limit_microusd: number;
  /** When the window ends (the next UTC day or month; null: a run's lifetime). */
  until_ms: number | null;
  /** Largest spend first; a workspace clause has exactly one. */
  uses: ScopeUse[];
  /** Scope instances with spend left out past `top`. */
  more: number;
}

/** Which scope instances {@link budgetUse} answers for. */
export interface UseFilter {
  /** Only the scopes that concern one host (its runs, itself, the workspace). */
  onlyHost?: string;
  /** Only this run among per-run scopes. */
  onlyRun?: string;
  /** At most this many instances per clause, the largest spend first (unset: 500). */
  top?: number;
  /** Only the instances at or past the clause's limit. */
  atLimit?: boolean;
}

const MAX_LISTED = 500;

type Row = { id: string; host_id: string; used: number; reserved: number };

/**
 * Each clause's spend (priced calls, tool calls' charges and the budget leased and not yet settled) per scope
 * instance in the window that holds `now`, read from the running totals (`counters.ts`): every
 * query is one counter or one index range, the largest first. A `run` scope or window counts per
 * run; `host` per host; `workspace` once. A host or workspace scope with no spend yet answers 0
 * for the host asked about (or the workspace); per-run and per-host scopes without spend are not
 * listed.
 */
export function budgetUse(sql: SqlStorage, clauses: BudgetClause[], now: number, f: UseFilter = {}): ClauseUse[] {
  return clauses.map((c) => {
    const scope = counterScope(c);
    const period = periodAt(c.window, now);
    const base = { budget: c.id, scope: c.scope, window: c.window, limit_microusd: c.limit_microusd, until_ms: windowEnd(c.window, now) };
    const single = (id: string, host: string | null) => {
      const n = counter(sql, scope, id, period);
      return { ...base, uses: [{ host, spent_microusd: n.used, reserved_microusd: n.reserved }], more: 0 };
    };
    if (scope === "workspace") return single("", null);
    if (scope === "host" && f.onlyHost !== undefined) return single(f.onlyHost, f.onlyHost);
    const top = Math.min(f.top ?? MAX_LISTED, MAX_LISTED);
    const where = ["metric = ?", "scope = ?", "period = ?", "used > 0"];
    const args: SqlStorageValue[] = [USD, scope, period];
    if (f.atLimit) {
      where.push("used >= ?");
      args.push(c.limit_microusd);
    }
    if (scope === "run" && f.onlyHost !== undefined) {
      where.push("host_id = ?");
      args.push(f.onlyHost);
    }
    if (scope === "run" && f.onlyRun !== undefined) {
      where.push("id = ?");
      args.push(f.onlyRun);
    }
    const filter = where.join(" AND ");
    const rows = sql
      .exec<Row>(`SELECT id, host_id, used, reserved FROM counters WHERE ${filter} ORDER BY used DESC, id LIMIT ?`, ...args, top + 1)
      .toArray();
    const more =
      rows.length > top ? sql.exec<{ n: number }>(`SELECT count(*) AS n FROM counters WHERE ${filter}`, ...args).one().n - top : 0;
    const uses = rows.slice(0, top).map((r) => ({
      host: r.host_id,
      ...(scope === "run" ? { run: r.id } : {}),
      spent_microusd: r.used,
      reserved_microusd: r.reserved,
    }));
    return { ...base, uses, more };
  });
}

/**
 * The scopes whose spend reached their clause's limit at `now` ({@link budgetUse}'s rule), those
 * that concern `onlyHost` when it is given. A host or workspace scope with no spend yet is
 * exhausted only by a limit of 0.
 */
export function exhaustedScopes(sql: SqlStorage, clauses: BudgetClause[], now: number, onlyHost?: string): ExhaustedScope[] {
  return atLimit(budgetUse(sql, clauses, now, { onlyHost, atLimit: true }));
}

function atLimit(use: ClauseUse[]): ExhaustedScope[] {
  return use.flatMap(({ uses, more: _more, ...c }) =>
    uses.filter((u) => u.spent_microusd >= c.limit_microusd).map((u) => ({ ...c, ...u })),
  );
}

/**
 * Every host's exhausted scopes at once (what a workspace-wide push makes each host's policy from,
 * taking those that {@link concernsHost}), and whether the list is whole: not when a clause has
 * more exhausted instances than are listed, nor when a per-host clause's limit is 0 (every host is
 * exhausted by it, with spend or not, and only those with spend are listed).
 */
export function allExhaustedScopes(sql: SqlStorage, clauses: BudgetClause[], now: number): { scopes: ExhaustedScope[]; complete: boolean } {
  const use = budgetUse(sql, clauses, now, { atLimit: true });
  const complete = use.every((u) => u.more === 0) && clauses.every((c) => counterScope(c) !== "host" || c.limit_microusd > 0);
  return { scopes: atLimit(use), complete };
}

/** Whether an exhausted scope concerns a host (its policy lists it): the workspace's, the host's own, or one of its runs'. */
export function concernsHost(scope: ExhaustedScope, hostId: string): boolean {
  return scope.host === null || scope.host === hostId;
}

/**
 * What a lease for `runId` on `hostId` finds in the clauses that concern it (the run's, the host's,
 * the workspace's): the first scope past its limit, and the least room left among them (null when
 * no clause applies). Reaching a limit exactly is allowed; the next lease is refused. One counter per clause.
 */
export function leaseRoom(
  sql: SqlStorage,
  clauses: BudgetClause[],
  now: number,
  hostId: string,
  runId: string,
): { over: ExhaustedScope | undefined; room: number | null } {
  let over: ExhaustedScope | undefined;
  let room: number | null = null;
  for (const c of clauses) {
    const scope = counterScope(c);
    const n = counter(sql, scope, scope === "workspace" ? "" : scope === "host" ? hostId : runId, periodAt(c.window, now));
    room = Math.min(room ?? Number.POSITIVE_INFINITY, c.limit_microusd - n.used);
    if (!over && n.used > c.limit_microusd) {
      over = {
        budget: c.id,
        scope: c.scope,
        window: c.window,
        limit_microusd: c.limit_microusd,
        until_ms: windowEnd(c.window, now),
        host: scope === "workspace" ? null : hostId,
        ...(scope === "run" ? { run: runId } : {}),
        spent_microusd: n.used,
        reserved_microusd: n.reserved,
      };
    }
  }
  return { over, room: room === null ? null : Math.max(0, room) };
}

/**
 * A scope of a run's (its own, its host's, the workspace's) past its limit with every lease, priced
 * call and tool charge counted ({@link leaseRoom}'s rule).
 */
export function overLimit(
  sql: SqlStorage,
  clauses: BudgetClause[],
  now: number,
  hostId: string,
  runId: string,
): ExhaustedScope | undefined {
  return leaseRoom(sql, clauses, now, hostId, runId).over;
}

/**
 * Whether the counters that moved took any clause's current window across its limit (in either
 * direction): then the set of exhausted scopes changed and the hosts must hear of it.
 */
export function crossedLimit(clauses: BudgetClause[], moved: Moved[], now: number): boolean {
  return moved.some((m) =>
    clauses.some(
      (c) =>
        counterScope(c) === m.scope && periodAt(c.window, now) === m.period && m.before >= c.limit_microusd !== m.after >= c.limit_microusd,
    ),
  );
}

/** A lease, as the `leases` table holds it. */
export interface Lease {
  id: string;
  host_id: string;
  run_id: string;
  day: string;
  microusd: number;
  expires_ms: number;
}

const leaseKey = (l: Pick<Lease, "run_id" | "host_id" | "day">): SpendKey => ({ runId: l.run_id, hostId: l.host_id, day: l.day });

/** Stores a new lease and reserves its amount. */
export function addLease(sql: SqlStorage, l: Lease, now: number): Moved[] {
  sql.exec(
    "INSERT INTO leases (id, host_id, run_id, day, microusd, expires_ms) VALUES (?, ?, ?, ?, ?, ?)",
    l.id,
    l.host_id,
    l.run_id,
    l.day,
    l.microusd,
    l.expires_ms,
  );
  return addToCounters(sql, USD, leaseKey(l), 0, l.microusd, now);
}

/** Changes a lease's amount, expiry and day, moving what it reserves with it. */
export function changeLease(sql: SqlStorage, held: Lease, next: Pick<Lease, "microusd" | "expires_ms" | "day">, now: number): Moved[] {
  sql.exec("UPDATE leases SET microusd = ?, expires_ms = ?, day = ? WHERE id = ?", next.microusd, next.expires_ms, next.day, held.id);
  if (next.day === held.day) return addToCounters(sql, USD, leaseKey(held), 0, next.microusd - held.microusd, now);
  return [
    ...addToCounters(sql, USD, leaseKey(held), 0, -held.microusd, now),
    ...addToCounters(sql, USD, leaseKey({ ...held, day: next.day }), 0, next.microusd, now),
  ];
}

/** Deletes a lease and gives back what it reserves. */
export function dropLease(sql: SqlStorage, l: Lease, now: number): Moved[] {
  sql.exec("DELETE FROM leases WHERE id = ?", l.id);
  return addToCounters(sql, USD, leaseKey(l), 0, -l.microusd, now);
}

/** A lease by id, unexpired at `now`, of `hostId` when given. */
export function leaseOf(sql: SqlStorage, id: string, now: number, hostId?: string): Lease | undefined {
  return sql
    .exec<Lease & Record<string, SqlStorageValue>>(
      `SELECT id, host_id, run_id, day, microusd, expires_ms FROM leases WHERE id = ? AND expires_ms > ?${hostId === undefined ? "" : " AND host_id = ?"}`,
      ...([id, now, ...(hostId === undefined ? [] : [hostId])] as SqlStorageValue[]),
    )
    .toArray()[0];
}

/** Drops the leases that expired by `now` (a bounded step, the soonest first: the expiry index). */
export function expireLeases(sql: SqlStorage, now: number): Moved[] {
  const expired = sql
    .exec<Lease & Record<string, SqlStorageValue>>(
      "SELECT id, host_id, run_id, day, microusd, expires_ms FROM leases WHERE expires_ms <= ? ORDER BY expires_ms LIMIT 500",
      now,
    )
    .toArray();
  return expired.flatMap((l) => dropLease(sql, l, now));
}

/**
 * Takes each run's day totals, keeping the larger of what is held and what arrives (totals only
 * grow), and adds what a total grew by to the counters. That growth is spend now priced that a
 * lease of the run may still hold (the gateway leased it before the call, docs/api.md "Budget
 * leases"): the run's unexpired leases shrink by it, soonest to expire first, never below 0, so a
 * call is never counted twice.
 */
export function takeSpend(sql: SqlStorage, rows: RunSpend[], now: number): Moved[] {
  const moved: Moved[] = [];
  for (const r of rows) {
    const held = sql.exec<{ microusd: number }>("SELECT microusd FROM run_spend WHERE run_id = ? AND day = ?", r.runId, r.day).toArray()[0];
    const delta = r.microusd - (held?.microusd ?? 0);
    if (delta <= 0) continue;
    sql.exec(
      `INSERT INTO run_spend (run_id, day, host_id, microusd) VALUES (?, ?, ?, ?)
       ON CONFLICT (run_id, day) DO UPDATE SET microusd = excluded.microusd`,
      r.runId,
      r.day,
      r.hostId,
      r.microusd,
    );
    moved.push(...addSpend(sql, { runId: r.runId, hostId: r.hostId, day: r.day }, delta, now), ...shrinkLeases(sql, r.runId, delta, now));
  }
  return moved;
}

/** Takes `microusd` off a run's unexpired leases, soonest to expire first, none below 0. */
function shrinkLeases(sql: SqlStorage, runId: string, microusd: number, now: number): Moved[] {
  let left = microusd;
  const moved: Moved[] = [];
  const leases = sql
    .exec<Lease & Record<string, SqlStorageValue>>(
      "SELECT id, host_id, run_id, day, microusd, expires_ms FROM leases WHERE run_id = ? AND expires_ms > ? AND microusd > 0 ORDER BY expires_ms, id",
      runId,
      now,
    )
    .toArray();
  for (const l of leases) {
    if (left <= 0) break;
    const take = Math.min(l.microusd, left);
    moved.push(...changeLease(sql, l, { microusd: l.microusd - take, expires_ms: l.expires_ms, day: l.day }, now));
    left -= take;
  }
  return moved;
}

/** The UTC day a lease made or renewed at `now` holds its calls in. */
export const leaseDay = (now: number) => utcDay(now);
