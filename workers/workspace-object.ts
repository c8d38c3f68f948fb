import { DurableObject } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { type BudgetClause, Policy } from "../protocol/index.ts";
import { db, schema } from "./db/client.ts";
import { metered } from "./lib/meter.ts";
import type { ClauseUse, ExhaustedScope, RunSpend, UseFilter } from "./workspace/budgets.ts";
import { BudgetLedger, type Change, type LeaseAnswer, type ResizeAnswer } from "./workspace/ledger.ts";
import { type Announced, type Audience, PushHub } from "./workspace/push-hub.ts";
import { migrate } from "./workspace/schema.ts";

export type { LeaseAnswer, ResizeAnswer };

/** The header the Worker names an authenticated host by when it hands the object a push connection. */
export const PUSH_HOST_HEADER = "x-oxagen-push-host";

/** What the object keeps of its workspace's policy: the mode new chains are created under, and the budget clauses. */
interface Settings {
  mode: "enforce" | "observe";
  budgets: BudgetClause[];
}

/**
 * One per workspace (`env.WORKSPACES.idFromName(workspaceId)`): the one writer of its budget
 * counters (running totals, `workspace/counters.ts`), and the hub its hosts' recorders hold a
 * WebSocket to for policy pushes. It holds a copy of the policy's mode and budget clauses, set by
 * every policy change (`setPolicy`) and read from D1 once when missing, so a report, a lease or a
 * policy fetch asks D1 nothing. Connections use the WebSocket Hibernation API: an idle one keeps
 * no object in memory, and the ping a recorder sends is answered without waking it.
 */
export class WorkspaceObject extends DurableObject<Env> {
  readonly #hub: PushHub;
  #settings: Settings | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, metered(env, "WorkspaceObject"));
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

  /** Takes the policy's mode and budget clauses after the policy changed in D1. */
  setPolicy(p: Settings): void {
    this.ctx.storage.transactionSync(() => {
      this.ctx.storage.sql.exec("INSERT OR REPLACE INTO settings (id, mode, budgets) VALUES (1, ?, ?)", p.mode, JSON.stringify(p.budgets));
      this.#settings = { mode: p.mode, budgets: p.budgets };
      new BudgetLedger(this.ctx.storage.sql, p.budgets).clausesChanged(Date.now());
    });
  }

  /** The workspace's mode: a new chain is created under it. */
  async mode(): Promise<"enforce" | "observe"> {
    return (await this.#load()).mode;
  }

  /**
   * Takes runs' spend totals. When that exhausts a budget scope, or frees one, every connected
   * recorder of the workspace is told, by this object, after the answer: the report never waits
   * on the announcement.
   */
  async report(rows: RunSpend[], now: number): Promise<Change> {
    const ledger = await this.#ledger();
    return this.#announceIf(this.ctx.storage.transactionSync(() => ledger.report(rows, now)));
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
    if (answer.granted) this.#announceIf(answer);
    return answer;
  }

  /** Resizes a lease (see `workspace/ledger.ts`). */
  async resize(req: { hostId: string; leaseId: string; addMicrousd: number; ttlMs: number }, now: number): Promise<ResizeAnswer> {
    const ledger = await this.#ledger();
    const answer = this.ctx.storage.transactionSync(() => ledger.resize(req, now));
    if (answer.granted) this.#announceIf(answer);
    return answer;
  }

  /** Ends a lease; unknown or expired leases (or another host's) are a no-op. */
  async settle(leaseId: string, now: number, hostId?: string): Promise<Change> {
    const ledger = await this.#ledger();
    return this.#announceIf(this.ctx.storage.transactionSync(() => ledger.settle(leaseId, now, hostId)));
  }

  // One announcement to every connection (each recorder fetches its own policy), not waited on.
  #announceIf<T extends { changed: boolean }>(c: T): T {
    if (c.changed)
      this.ctx.waitUntil(this.#hub.announce("all", 0).catch((err: unknown) => console.error("budget announcement failed", err)));
    return c;
  }

  async #ledger(): Promise<BudgetLedger> {
    return new BudgetLedger(this.ctx.storage.sql, (await this.#load()).budgets);
  }

  async #load(): Promise<Settings> {
    if (this.#settings) return this.#settings;
    const row = this.ctx.storage.sql
      .exec<{ mode: string; budgets: string | null }>("SELECT mode, budgets FROM settings WHERE id = 1")
      .toArray()[0];
    if (row?.budgets) {
      this.#settings = { mode: row.mode as Settings["mode"], budgets: JSON.parse(row.budgets) as BudgetClause[] };
      return this.#settings;
    }
    const workspaceId = this.ctx.id.name;
    if (!workspaceId) throw new Error("a workspace's object is named by its workspace id");
    const d = db(this.env);
    const [policy, ws] = await d.batch([
      d.select({ payload: schema.policies.payload }).from(schema.policies).where(eq(schema.policies.workspaceId, workspaceId)),
      d.select({ mode: schema.workspaces.mode }).from(schema.workspaces).where(eq(schema.workspaces.id, workspaceId)),
    ]);
    // No policy stored yet: the workspace's first policy (policy-store.ts loadPolicy) sets it; until then none applies.
    if (!policy[0]) return { mode: ws[0]?.mode ?? "enforce", budgets: [] };
    const p = Policy.parse(JSON.parse(policy[0].payload));
    this.setPolicy({ mode: p.mode, budgets: p.budgets });
    return this.#settings!;
  }
}
