import { DurableObject } from "cloudflare:workers";
import type { BudgetClause } from "../protocol/index.ts";
import { utcDay } from "./spend/price.ts";
import {
  budgetUse,
  type ClauseUse,
  type ExhaustedScope,
  exhaustedKey,
  exhaustedScopes,
  leaseRoom,
  type RunSpend,
  takeSpend,
  type UseFilter,
} from "./workspace/budgets.ts";
import { type Announced, type Audience, PushHub } from "./workspace/push-hub.ts";
import { migrate } from "./workspace/schema.ts";
import {
  type CallEnd,
  type MeterCall,
  meterRefusal,
  type ReserveAnswer,
  reserveCall,
  settleCall,
  type ToolCallFilter,
  type ToolCallRow,
  type ToolCallRules,
  type ToolUse,
  toolCallRows,
  toolUse,
} from "./workspace/tool-meter.ts";

/** The header the Worker names an authenticated host by when it hands the object a push connection. */
export const PUSH_HOST_HEADER = "x-oxagen-push-host";

/** A lease of budget (see {@link WorkspaceObject.lease}). */
export type LeaseAnswer =
  | { granted: true; lease_id: string; microusd: number; expires_ms: number; room_microusd: number | null; changed: boolean }
  | { granted: false; exhausted: ExhaustedScope; room_microusd: number };

/** A resized lease (see {@link WorkspaceObject.resize}): a lease answer, or gone (unknown, expired, another host's). */
export type ResizeAnswer = LeaseAnswer | { granted: false; gone: true };

/** The room a refused lease's scope has without the amount asked (the scope's use counted it). */
function roomWithout(over: ExhaustedScope, asked: number): number {
  return Math.max(0, over.limit_microusd - (over.spent_microusd - asked));
}

/**
 * One per workspace (`env.WORKSPACES.idFromName(workspaceId)`): the one writer of its budget
 * counters, and the hub its hosts' recorders hold a WebSocket to for policy pushes. Connections use
 * the WebSocket Hibernation API: an idle one keeps no object in memory, and the ping a recorder
 * sends is answered without waking it.
 */
export class WorkspaceObject extends DurableObject<Env> {
  readonly #hub: PushHub;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#hub = new PushHub(ctx);
    void ctx.blockConcurrencyWhile(async () => migrate(ctx.storage));
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /** Accepts a push connection the Worker already authenticated (the host named in {@link PUSH_HOST_HEADER}). */
  override async fetch(request: Request): Promise<Response> {
    const host = request.headers.get(PUSH_HOST_HEADER);
    if (!host || request.headers.get("upgrade")?.toLowerCase() !== "websocket") return new Response(null, { status: 400 });
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [host]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  // What a recorder sends besides the auto-answered ping: acknowledgements of announcements.
  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    this.#hub.message(ws, message);
  }

  override webSocketClose(ws: WebSocket, code: number): void {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
    } catch {
      // Already closed.
    }
  }

  /**
   * Announces a policy change to the audience's connections and waits (at most `waitMs`) until the
   * recorder of every host it reached acknowledged that it fetched and applied its policy. Answers
   * the hosts reached and the slow ones (see `workspace/push-hub.ts`).
   */
  announce(to: Audience, waitMs: number): Promise<Announced> {
    return this.#hub.announce(to, waitMs);
  }

  /** The hosts with a push connection open now. */
  connectedHosts(): string[] {
    return this.#hub.connectedHosts();
  }

  /** Closes every push connection of a host (it was unenrolled). */
  disconnect(host: string): void {
    for (const ws of this.ctx.getWebSockets(host)) ws.close(1008, "unenrolled");
  }

  /**
   * Takes runs' spend totals. Answers whether the set of exhausted scopes changed (then the
   * caller pushes the hosts' new policies) and when it last changed.
   */
  report(rows: RunSpend[], clauses: BudgetClause[], now: number): { changed: boolean; changedMs: number } {
    return this.ctx.storage.transactionSync(() => {
      takeSpend(this.ctx.storage.sql, rows, now);
      return this.#settleChange(clauses, now);
    });
  }

  /**
   * The exhausted scopes that concern one host (the workspace's, its own, its runs'), and when the
   * exhausted set last changed (the host policy's `issued_ms` is at least that).
   */
  exhausted(hostId: string, clauses: BudgetClause[], now: number): { scopes: ExhaustedScope[]; changedMs: number } {
    return this.ctx.storage.transactionSync(() => {
      const { changedMs } = this.#settleChange(clauses, now);
      return { scopes: exhaustedScopes(this.ctx.storage.sql, clauses, now, hostId), changedMs };
    });
  }

  /**
   * Each clause's use in its current window: per scope instance, the spend (priced plus leased)
   * against the limit, by the same rule that decides what is exhausted. Read-only.
   */
  use(clauses: BudgetClause[], now: number, filter: UseFilter = {}): ClauseUse[] {
    return budgetUse(this.ctx.storage.sql, clauses, now, filter);
  }

  /**
   * Leases budget for calls not yet priced (the gateway's reservation): `microusd` is held as spent
   * for the run, its host and the workspace until the lease is settled or expires. Refused, with
   * the scope, when it would take any clause of the run's scopes past its limit. One writer, so two
   * leases never both take the last of a budget.
   */
  lease(req: { hostId: string; runId: string; microusd: number; ttlMs: number }, clauses: BudgetClause[], now: number): LeaseAnswer {
    return this.ctx.storage.transactionSync(() => {
      const sql = this.ctx.storage.sql;
      const id = `lease_${crypto.randomUUID().replaceAll("-", "")}`;
      const expires = now + req.ttlMs;
      sql.exec(
        "INSERT INTO leases (id, host_id, run_id, day, microusd, expires_ms) VALUES (?, ?, ?, ?, ?, ?)",
        id,
        req.hostId,
        req.runId,
        utcDay(now),
        req.microusd,
        expires,
      );
      const { over, room } = leaseRoom(sql, clauses, now, req.hostId, req.runId);
      if (over) {
        sql.exec("DELETE FROM leases WHERE id = ?", id);
        return { granted: false, exhausted: over, room_microusd: roomWithout(over, req.microusd) };
      }
      const { changed } = this.#settleChange(clauses, now);
      return { granted: true, lease_id: id, microusd: req.microusd, expires_ms: expires, room_microusd: room, changed };
    });
  }

  /**
   * Changes a lease's amount by `addMicrousd` (never below 0) and sets its expiry to `now + ttlMs`:
   * the gateway grows its slice when it runs low, gives back what it does not need, and keeps a
   * lease alive while its calls run. Growing is refused like a new lease (the lease stays as it
   * was); shrinking is always granted. Gone for a lease that is unknown, expired or another host's.
   */
  resize(req: { hostId: string; leaseId: string; addMicrousd: number; ttlMs: number }, clauses: BudgetClause[], now: number): ResizeAnswer {
    return this.ctx.storage.transactionSync(() => {
      const sql = this.ctx.storage.sql;
      const held = sql
        .exec<{ run_id: string; microusd: number; expires_ms: number; day: string }>(
          "SELECT run_id, microusd, expires_ms, day FROM leases WHERE id = ? AND host_id = ? AND expires_ms > ?",
          req.leaseId,
          req.hostId,
          now,
        )
        .toArray()[0];
      if (!held) return { granted: false, gone: true };
      const microusd = Math.max(0, held.microusd + req.addMicrousd);
      const expires = now + req.ttlMs;
      // A lease renewed past UTC midnight holds its calls in the new day's (and month's) window.
      sql.exec("UPDATE leases SET microusd = ?, expires_ms = ?, day = ? WHERE id = ?", microusd, expires, utcDay(now), req.leaseId);
      const { over, room } = leaseRoom(sql, clauses, now, req.hostId, held.run_id);
      if (microusd > held.microusd) {
        if (over) {
          sql.exec(
            "UPDATE leases SET microusd = ?, expires_ms = ?, day = ? WHERE id = ?",
            held.microusd,
            held.expires_ms,
            held.day,
            req.leaseId,
          );
          return { granted: false, exhausted: over, room_microusd: roomWithout(over, microusd - held.microusd) };
        }
      }
      const { changed } = this.#settleChange(clauses, now);
      return { granted: true, lease_id: req.leaseId, microusd, expires_ms: expires, room_microusd: room, changed };
    });
  }

  /** Ends a lease (its calls are priced from the record as they arrive); unknown or expired leases are a no-op. */
  settle(leaseId: string, clauses: BudgetClause[], now: number, hostId?: string): { changed: boolean; changedMs: number } {
    return this.ctx.storage.transactionSync(() => {
      const sql = this.ctx.storage.sql;
      // Only the host that took a lease may settle it (a settle of another's lease is a no-op).
      if (hostId === undefined) sql.exec("DELETE FROM leases WHERE id = ?", leaseId);
      else sql.exec("DELETE FROM leases WHERE id = ? AND host_id = ?", leaseId, hostId);
      sql.exec("DELETE FROM leases WHERE expires_ms <= ?", now);
      return this.#settleChange(clauses, now);
    });
  }

  /** Reserves a tool call before it is forwarded (workspace/tool-meter.ts `reserveCall`); `changed` as for a lease. */
  reserveToolCall(call: MeterCall, rules: ToolCallRules, now: number): ReserveAnswer {
    return this.ctx.storage.transactionSync(() => {
      const answer = reserveCall(this.ctx.storage.sql, call, rules, now);
      return answer.granted ? { granted: true, changed: this.#settleChange(rules.budgets, now).changed } : answer;
    });
  }

  /** Settles a reserved tool call with how it ended; `changed` as for a settled lease. */
  settleToolCall(end: CallEnd, budgets: BudgetClause[], now: number): { changed: boolean } {
    return this.ctx.storage.transactionSync(() => {
      settleCall(this.ctx.storage.sql, end, now);
      return { changed: this.#settleChange(budgets, now).changed };
    });
  }

  /** Writes the meter row of a tool call refused before it was reserved (an access clause, a stop, a drift). */
  refuseToolCall(call: MeterCall, refusal: { rule: string; reason: string; reasonSha256: string }, now: number): void {
    meterRefusal(this.ctx.storage.sql, call, refusal, now);
  }

  /** The meter log, newest first. */
  toolCalls(filter: ToolCallFilter): ToolCallRow[] {
    return toolCallRows(this.ctx.storage.sql, filter);
  }

  /** Calls, refusals, errors and charges per tool since `sinceMs`. */
  toolUse(sinceMs: number): ToolUse[] {
    return toolUse(this.ctx.storage.sql, sinceMs);
  }

  #settleChange(clauses: BudgetClause[], now: number): { changed: boolean; changedMs: number } {
    const sql = this.ctx.storage.sql;
    const key = exhaustedKey(exhaustedScopes(sql, clauses, now));
    const meta = sql.exec<{ changed_ms: number; exhausted: string }>("SELECT changed_ms, exhausted FROM meta WHERE id = 1").toArray()[0];
    if (meta && meta.exhausted === key) return { changed: false, changedMs: meta.changed_ms };
    const changedMs = Math.max(now, (meta?.changed_ms ?? 0) + 1);
    sql.exec("INSERT OR REPLACE INTO meta (id, changed_ms, exhausted) VALUES (1, ?, ?)", changedMs, key);
    // The first look at a workspace with nothing exhausted is no change anybody must hear of.
    return { changed: meta !== undefined || key !== "[]", changedMs };
  }
}
