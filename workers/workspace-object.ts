import { DurableObject } from "cloudflare:workers";
import { MAX_PAUSED_AGENTS, Policy } from "../protocol/index.ts";
import { workspacePausedAgents } from "./lib/agent-pauses.ts";
import { announce } from "./lib/hubs.ts";
import type { WorkspacePart } from "./lib/host-policy.ts";
import { metered } from "./lib/meter.ts";
import { readPolicy } from "./lib/policy-store.ts";
import type { ClauseUse, ExhaustedScope, RunSpend, UseFilter } from "./workspace/budgets.ts";
import type { PushPart } from "./workspace/push-hub.ts";
import { BudgetLedger, type Change, type LeaseAnswer, type ResizeAnswer } from "./workspace/ledger.ts";
import { migrate } from "./workspace/schema.ts";
import {
  type CallEnd,
  type MeterCall,
  meterRefusal,
  type ReserveAnswer,
  type ToolCallFilter,
  type ToolCallRow,
  type ToolCallRules,
  type ToolUse,
  toolCallRows,
  toolUse,
} from "./workspace/tool-meter.ts";

export type { LeaseAnswer, ResizeAnswer };

/** What the object keeps of its workspace: the stored policy, and the agent names paused on every host. */
interface Settings {
  policy: Policy;
  pausedAgents: string[];
  pausesMs: number;
}

/**
 * One per workspace (`env.WORKSPACES.idFromName(workspaceId)`): the one writer of its budget
 * counters (running totals, `workspace/counters.ts`), and the keeper of the workspace's part of
 * every host's policy: a copy of the stored policy (set by every policy change, `setPolicy`) and
 * of the agent names paused on every host (`setPausedAgents`), read from D1 once when missing. A
 * report, a lease or a policy fetch asks D1 nothing. The push connections live on the
 * workspace's hubs (`push-hub-object.ts`).
 */
export class WorkspaceObject extends DurableObject<Env> {
  #settings: Settings | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, metered(env, "WorkspaceObject"));
    void ctx.blockConcurrencyWhile(async () => migrate(ctx.storage));
  }

  /** Takes the stored policy after it changed in D1. */
  setPolicy(policy: Policy): void {
    this.ctx.storage.transactionSync(() => {
      const s = this.#stored();
      this.#save({ policy, pausedAgents: s?.pausedAgents ?? [], pausesMs: s?.pausesMs ?? 0 });
      new BudgetLedger(this.ctx.storage.sql, policy.budgets).clausesChanged(Date.now());
    });
  }

  /** Takes the agent names paused on every host after they changed in D1: every host's `issued_ms` moves on. */
  async setPausedAgents(names: string[], now: number): Promise<void> {
    const s = await this.#load();
    this.#save({ ...s, pausedAgents: names.slice(0, MAX_PAUSED_AGENTS), pausesMs: Math.max(now, s.pausesMs + 1) });
  }

  /** The workspace's mode: a new chain is created under it. */
  async mode(): Promise<"enforce" | "observe"> {
    return (await this.#load()).policy.mode;
  }

  /** The workspace's retention (which bodies it keeps), as its policy says: a body upload is checked against it. */
  async retention(): Promise<Policy["retention"]> {
    return (await this.#load()).policy.retention;
  }

  /** The workspace's part of one host's policy (see `lib/host-policy.ts`). */
  async policyPart(hostId: string, now: number): Promise<WorkspacePart> {
    const s = await this.#load();
    const exhausted =
      s.policy.budgets.length === 0
        ? { scopes: [], changedMs: 0 }
        : this.ctx.storage.transactionSync(() => new BudgetLedger(this.ctx.storage.sql, s.policy.budgets).exhausted(hostId, now));
    return { policy: s.policy, pausedAgents: s.pausedAgents, pausesMs: s.pausesMs, exhausted };
  }

  /** The workspace's part of every host's policy at once, for a workspace-wide push (`workspace/push-hub.ts`). */
  async pushPart(now: number): Promise<PushPart> {
    const s = await this.#load();
    const exhausted =
      s.policy.budgets.length === 0
        ? { scopes: [], changedMs: 0, complete: true }
        : this.ctx.storage.transactionSync(() => new BudgetLedger(this.ctx.storage.sql, s.policy.budgets).allExhausted(now));
    return { policy: s.policy, pausedAgents: s.pausedAgents, pausesMs: s.pausesMs, exhausted };
  }

  /**
   * Takes runs' spend totals. When that exhausts a budget scope, or frees one, every connected
   * recorder of the workspace is told, by this object, after the answer: the report never waits
   * on the announcement.
   */
  async report(rows: RunSpend[], now: number): Promise<Change> {
    const ledger = await this.#ledger();
    return this.#announceIf(
      this.ctx.storage.transactionSync(() => ledger.report(rows, now)),
      now,
    );
  }

  /** The exhausted scopes that concern one host, and when the exhausted set last changed (its policy's `issued_ms` is at least that). */
  async exhausted(hostId: string, now: number): Promise<{ scopes: ExhaustedScope[]; changedMs: number }> {
    const ledger = await this.#ledger();
    return this.ctx.storage.transactionSync(() => ledger.exhausted(hostId, now));
  }

  /** Each clause's use in its current window: per scope instance, the spend (priced plus leased) against the limit. */
  async use(now: number, filter: UseFilter = {}): Promise<ClauseUse[]> {
    const ledger = await this.#ledger();
    return this.ctx.storage.transactionSync(() => ledger.use(now, filter));
  }

  /** Leases budget for calls not yet priced (see `workspace/ledger.ts`); an exhaustion it causes is announced after the answer. */
  async lease(req: { hostId: string; runId: string; microusd: number; ttlMs: number }, now: number): Promise<LeaseAnswer> {
    const ledger = await this.#ledger();
    const answer = this.ctx.storage.transactionSync(() => ledger.lease(req, now));
    if (answer.granted) this.#announceIf(answer, now);
    return answer;
  }

  /** Resizes a lease (see `workspace/ledger.ts`). */
  async resize(req: { hostId: string; leaseId: string; addMicrousd: number; ttlMs: number }, now: number): Promise<ResizeAnswer> {
    const ledger = await this.#ledger();
    const answer = this.ctx.storage.transactionSync(() => ledger.resize(req, now));
    if (answer.granted) this.#announceIf(answer, now);
    return answer;
  }

  /** Ends a lease; unknown or expired leases (or another host's) are a no-op. */
  async settle(leaseId: string, now: number, hostId?: string): Promise<Change> {
    const ledger = await this.#ledger();
    return this.#announceIf(
      this.ctx.storage.transactionSync(() => ledger.settle(leaseId, now, hostId)),
      now,
    );
  }

  // One announcement to every hub (each makes its hosts' policies from this part), not waited on.
  // The part is read at the change's own time, as the change was counted.
  #announceIf<T extends { changed: boolean }>(c: T, now: number): T {
    if (c.changed)
      this.ctx.waitUntil(
        this.pushPart(now)
          .then((part) => announce(this.env, this.#workspaceId(), "all", 0, part))
          .catch((err: unknown) => console.error("budget announcement failed", err)),
      );
    return c;
  }

  async #ledger(): Promise<BudgetLedger> {
    return new BudgetLedger(this.ctx.storage.sql, (await this.#load()).policy.budgets);
  }

  #workspaceId(): string {
    const id = this.ctx.id.name;
    if (!id) throw new Error("a workspace's object is named by its workspace id");
    return id;
  }

  /**
   * Reserves a tool call before it is forwarded (`workspace/ledger.ts` reserveTool), against the
   * workspace's budget clauses this object holds; an exhaustion it causes is announced after the answer.
   */
  async reserveToolCall(call: MeterCall, rules: ToolCallRules, now: number): Promise<ReserveAnswer> {
    const ledger = await this.#ledger();
    const answer = this.ctx.storage.transactionSync(() => ledger.reserveTool(call, rules, now));
    if (answer.granted) this.#announceIf(answer, now);
    return answer;
  }

  /** Settles a reserved tool call with how it ended; an exhaustion it frees or causes is announced after the answer. */
  async settleToolCall(end: CallEnd, now: number): Promise<Change> {
    const ledger = await this.#ledger();
    return this.#announceIf(
      this.ctx.storage.transactionSync(() => ledger.settleTool(end, now)),
      now,
    );
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

  #stored(): Settings | null {
    const row = this.ctx.storage.sql
      .exec<{ policy: string | null; paused_agents: string; pauses_ms: number }>(
        "SELECT policy, paused_agents, pauses_ms FROM settings WHERE id = 1",
      )
      .toArray()[0];
    if (!row?.policy) return null;
    return { policy: JSON.parse(row.policy) as Policy, pausedAgents: JSON.parse(row.paused_agents) as string[], pausesMs: row.pauses_ms };
  }

  #save(s: Settings): void {
    this.ctx.storage.sql.exec(
      "INSERT OR REPLACE INTO settings (id, mode, policy, paused_agents, pauses_ms) VALUES (1, ?, ?, ?, ?)",
      s.policy.mode,
      JSON.stringify(s.policy),
      JSON.stringify(s.pausedAgents),
      s.pausesMs,
    );
    this.#settings = s;
  }

  async #load(): Promise<Settings> {
    this.#settings ??= this.#stored();
    if (this.#settings) return this.#settings;
    const workspaceId = this.#workspaceId();
    const [{ policy }, pauses] = await Promise.all([readPolicy(this.env, workspaceId), workspacePausedAgents(this.env, workspaceId)]);
    // Another call may have set it while D1 answered: what it set is newer.
    this.#settings ??= this.#stored();
    if (this.#settings) return this.#settings;
    this.#save({
      policy: Policy.parse(policy),
      pausedAgents: pauses.map((x) => x.name),
      pausesMs: Math.max(0, ...pauses.map((x) => x.pausedMs)),
    });
    return this.#settings!;
  }
}
