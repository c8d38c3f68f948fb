import type { BudgetClause, ExhaustedBudget } from "../../protocol/index.ts";
import { utcDay } from "../spend/price.ts";

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

/** Where a clause's window started and when it ends (null: the run's lifetime). */
function windowOf(window: BudgetClause["window"], now: number): { from: string | null; until: number | null } {
  const d = new Date(now);
  if (window === "day") return { from: utcDay(now), until: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) };
  if (window === "month") return { from: `${utcDay(now).slice(0, 7)}-01`, until: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
  return { from: null, until: null };
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
  /** Largest spend first when `top` is given; a workspace clause has exactly one. */
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
  /** At most this many instances per clause, the largest spend first (unset: all, in no set order). */
  top?: number;
}

/** Tool calls' charges (workspace/tool-meter.ts): the cost of each call reserved or forwarded. */
const TOOL_SPEND = "SELECT run_id, host_id, day, cost_microusd AS microusd, 0 AS leased FROM tool_calls WHERE cost_microusd > 0";

/**
 * A scope of a run's (its own, its host's, the workspace's) past its limit with every lease and
 * tool charge counted; reaching a limit exactly is allowed (the next lease is refused).
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
 * Each clause's spend (priced calls, the budget leased and not yet settled, and tool calls' charges) per scope
 * instance in the window that holds `now`. A `run` scope or window counts per run; `host` per
 * host; `workspace` once. A host or workspace scope with no spend yet answers 0 for the host
 * asked about (or the workspace); per-run and per-host scopes without spend are not listed.
 */
export function budgetUse(sql: SqlStorage, clauses: BudgetClause[], now: number, f: UseFilter = {}): ClauseUse[] {
  return clauses.map((c) => {
    const { from, until } = windowOf(c.window, now);
    const perRun = c.scope === "run" || c.window === "run";
    const group = perRun ? "run_id, host_id" : c.scope === "host" ? "host_id" : "";
    const where: string[] = [];
    const args: SqlStorageValue[] = [];
    if (from !== null) {
      where.push("day >= ?");
      args.push(from);
    }
    // A direct client's tool calls have no run or host: they count for the workspace only.
    if (perRun) where.push("run_id IS NOT NULL");
    else if (c.scope === "host") where.push("host_id IS NOT NULL");
    if (f.onlyHost !== undefined && (perRun || c.scope === "host")) {
      where.push("host_id = ?");
      args.push(f.onlyHost);
    }
    if (f.onlyRun !== undefined && perRun) {
      where.push("run_id = ?");
      args.push(f.onlyRun);
    }
    const filter = where.length > 0 ? `WHERE ${where.join(" AND ")}` : "";
    const rows = sql
      .exec<{ run_id?: string; host_id?: string; spent: number; reserved: number }>(
        `SELECT ${group ? `${group}, ` : ""}sum(microusd) AS spent, sum(leased) AS reserved FROM (
           SELECT run_id, host_id, day, microusd, 0 AS leased FROM run_spend
           UNION ALL SELECT run_id, host_id, day, microusd, microusd AS leased FROM leases WHERE expires_ms > ${now}
           UNION ALL ${TOOL_SPEND}
         ) ${filter} ${group ? `GROUP BY ${group}` : ""} ${group && f.top !== undefined ? `ORDER BY spent DESC, ${group}` : ""}`,
        ...args,
      )
      .toArray();
    const base = { budget: c.id, scope: c.scope, window: c.window, limit_microusd: c.limit_microusd, until_ms: until };
    if (!group || (c.scope === "host" && f.onlyHost !== undefined && rows.length === 0)) {
      const host = c.scope === "host" ? (f.onlyHost ?? null) : null;
      return { ...base, uses: [{ host, spent_microusd: rows[0]?.spent ?? 0, reserved_microusd: rows[0]?.reserved ?? 0 }], more: 0 };
    }
    const uses = rows.map((r) => ({
      host: r.host_id ?? null,
      ...(perRun && r.run_id ? { run: r.run_id } : {}),
      spent_microusd: r.spent,
      reserved_microusd: r.reserved,
    }));
    const top = f.top ?? uses.length;
    return { ...base, uses: uses.slice(0, top), more: Math.max(0, uses.length - top) };
  });
}

/**
 * The scopes whose spend reached their clause's limit at `now` ({@link budgetUse}'s rule);
 * `onlyHost` narrows to the scopes that concern one host. A host or workspace scope with no
 * spend yet is exhausted only by a limit of 0.
 */
export function exhaustedScopes(sql: SqlStorage, clauses: BudgetClause[], now: number, onlyHost?: string): ExhaustedScope[] {
  return budgetUse(sql, clauses, now, { onlyHost }).flatMap(({ uses, more: _more, ...c }) =>
    uses.filter((u) => u.spent_microusd >= c.limit_microusd).map((u) => ({ ...c, ...u })),
  );
}

/**
 * What a lease for `runId` on `hostId` finds in the clauses that concern it (the run's, the host's,
 * the workspace's): the first scope past its limit, and the least room left among them (null when
 * no clause applies). Reaching a limit exactly is allowed; the next lease is refused.
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
  for (const { uses, more: _more, ...c } of budgetUse(sql, clauses, now, { onlyHost: hostId, onlyRun: runId })) {
    for (const u of uses) {
      if (u.run !== undefined && u.run !== runId) continue;
      room = Math.min(room ?? Number.POSITIVE_INFINITY, c.limit_microusd - u.spent_microusd);
      if (!over && u.spent_microusd > c.limit_microusd) over = { ...c, ...u };
    }
  }
  return { over, room: room === null ? null : Math.max(0, room) };
}

/**
 * Takes each run's day totals, keeping the larger of what is held and what arrives (totals only
 * grow). What a run's total grew by is spend now priced that a lease of the run may still hold
 * (the gateway leased it before the call, docs/api.md "Budget leases"): the run's unexpired
 * leases shrink by it, soonest to expire first, never below 0, so a call is never counted twice.
 */
export function takeSpend(sql: SqlStorage, rows: RunSpend[], now: number): void {
  const grew = new Map<string, number>();
  for (const r of rows) {
    const held = sql.exec<{ microusd: number }>("SELECT microusd FROM run_spend WHERE run_id = ? AND day = ?", r.runId, r.day).toArray()[0];
    const delta = r.microusd - (held?.microusd ?? 0);
    if (delta > 0) grew.set(r.runId, (grew.get(r.runId) ?? 0) + delta);
    sql.exec(
      `INSERT INTO run_spend (run_id, day, host_id, microusd) VALUES (?, ?, ?, ?)
       ON CONFLICT (run_id, day) DO UPDATE SET microusd = max(microusd, excluded.microusd)`,
      r.runId,
      r.day,
      r.hostId,
      r.microusd,
    );
  }
  for (const [runId, priced] of grew) shrinkLeases(sql, runId, priced, now);
}

/** Takes `microusd` off a run's unexpired leases, soonest to expire first, none below 0. */
function shrinkLeases(sql: SqlStorage, runId: string, microusd: number, now: number): void {
  let left = microusd;
  const leases = sql
    .exec<{ id: string; microusd: number }>(
      "SELECT id, microusd FROM leases WHERE run_id = ? AND expires_ms > ? AND microusd > 0 ORDER BY expires_ms, id",
      runId,
      now,
    )
    .toArray();
  for (const l of leases) {
    if (left <= 0) break;
    const take = Math.min(l.microusd, left);
    sql.exec("UPDATE leases SET microusd = microusd - ? WHERE id = ?", take, l.id);
    left -= take;
  }
}

/** A stable text of an exhausted set (spent amounts left out: only which scopes are exhausted matters). */
export function exhaustedKey(scopes: ExhaustedScope[]): string {
  return JSON.stringify(scopes.map((s) => [s.budget, s.host, s.run ?? null, s.until_ms, s.limit_microusd]).sort());
}
