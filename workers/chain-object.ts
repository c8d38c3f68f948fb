import { DurableObject } from "cloudflare:workers";
import type { CoverageFacts, Gap } from "../protocol/index.ts";
import { ChainCore } from "./chain/core.ts";
import { type ExportHead, type ExportPage, type ExportPageRequest, exportHead, exportPage } from "./chain/export.ts";
import { noteBatch, noteSent, projectionDue, projectionMessage } from "./chain/projection.ts";
import { migrate } from "./chain/schema.ts";
import type { ChainIngest, ChainIngestResult, ChainSummary, FramePage } from "./chain/types.ts";
import { serverKey } from "./keys.ts";
import { hostObject } from "./auth/host.ts";
import { metered } from "./lib/meter.ts";
import { QUIET_MS } from "./lib/quiet.ts";
import { workspaceMode } from "./lib/policy-store.ts";
import { project } from "./projection/messages.ts";

/** The projection's coalescing window when `OXAGEN_PROJECTION_MS` does not say. */
const DEFAULT_PROJECTION_MS = 5000;

/** One chain's part of a batch as the Worker hands it: the workspace's mode is the object's to learn, once, when it creates the chain. */
export type ChainIngestRequest = Omit<ChainIngest, "init"> & { init: Omit<ChainIngest["init"], "mode"> };

/**
 * One run's chain, or one host's own chain (`host_<id>`): the only writer of it. Named by the chain
 * id (`env.CHAINS.idFromName(chain)`). The logic lives in {@link ChainCore}; every RPC below runs it
 * inside one synchronous transaction, so no `await` ever separates reading the head from writing.
 *
 * The object also owns its run's fleet row: every change is sent, coalesced, through the
 * projection queue to D1 (at once for a new chain or a status change, otherwise at most once per
 * `OXAGEN_PROJECTION_MS`), by its alarm, which also closes the run 12 hours after its last frame.
 */
export class ChainObject extends DurableObject<Env> {
  readonly #core: ChainCore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, metered(env, "ChainObject"));
    this.#core = new ChainCore(ctx.storage.sql);
    void ctx.blockConcurrencyWhile(async () => migrate(ctx.storage));
  }

  /** Takes one chain's part of an ingest batch (frames, then locks) and answers its ack and summary. */
  async ingest(part: ChainIngestRequest): Promise<ChainIngestResult> {
    // Only a new chain needs the workspace's mode (an existing one keeps the mode it began under).
    const before = this.#core.state();
    const mode = before?.mode ?? (await workspaceMode(this.env, part.init.workspace));
    const result = this.ctx.storage.transactionSync(() => {
      const r = this.#core.ingest({ ...part, init: { ...part.init, mode } });
      const refused = r.ack.status === "refused" || r.ack.conflicts.length > 0 || r.ack.locks_refused.length > 0;
      noteBatch(this.ctx.storage.sql, part.now, r.ack.held > 0, refused);
      return r;
    });
    await this.#stopped(before, result.summary);
    await this.#schedule(result.summary, part.now);
    return result;
  }

  // A paused run that stops (ends, crashes, closes, or its computer ends the session) leaves its host's policy at once.
  async #stopped(before: { status: string; hostStopped: boolean } | null, after: ChainSummary): Promise<void> {
    if (after.kind !== "run" || !before) return;
    const running = (s: { status: string; hostStopped: boolean }) => !s.hostStopped && (s.status === "live" || s.status === "sealed");
    if (running(before) && !running(after)) await hostObject(this.env, after.hostId).runStopped(after.chain);
  }

  /** The run's summary, or null when the object holds nothing. */
  summary(): ChainSummary | null {
    const st = this.#core.state();
    return st ? this.#core.summary(st) : null;
  }

  /** The summary with every gap of the record (chain-derived, then the server's gap book) and the coverage facts. */
  detail(): { summary: ChainSummary; gaps: Gap[]; facts: CoverageFacts } | null {
    const st = this.#core.state();
    return st ? { summary: this.#core.summary(st), gaps: this.#core.gaps(st), facts: st.facts } : null;
  }

  /** Closes the run if it is live and has had no frame for `quietMs` (server clock); the next frame reopens it. */
  async close(now: number, quietMs: number): Promise<ChainSummary | null> {
    const before = this.#core.state();
    const s = this.ctx.storage.transactionSync(() => this.#core.close(now, quietMs));
    if (s) {
      await this.#stopped(before, s);
      await this.#schedule(s, now);
    }
    return s;
  }

  /**
   * Seals the run: a final lock signed by the server key (unless a final lock is already stored),
   * status `sealed`, and gaps for what the record still lacks. Later frames are refused and
   * recorded as `frames_after_seal`. Idempotent.
   */
  async seal(now: number): Promise<ChainSummary | null> {
    const key = serverKey(this.env);
    const s = this.ctx.storage.transactionSync(() => this.#core.seal(now, key.secret));
    if (s) await this.#schedule(s, now);
    return s;
  }

  /** The host whose chain this is, or null before its first frame. */
  owner(): string | null {
    return this.#core.state()?.hostId ?? null;
  }

  /** Whether this chain is a run of `hostId` (a body upload for it is that host's to make). */
  ownedBy(hostId: string): boolean {
    return this.owner() === hostId;
  }

  /** Notes that bodies the chain may name are stored in R2. */
  bodiesReceived(sha256s: string[], now: number): void {
    this.ctx.storage.transactionSync(() => {
      for (const sha of sha256s) this.#core.bodyReceived(sha, now);
    });
  }

  /** Records a body refused on the server's credential re-check as a `body_refused` gap. */
  async bodyRefused(sha256: string, role: string, kinds: string[]): Promise<ChainSummary | null> {
    const s = this.ctx.storage.transactionSync(() => {
      const st = this.#core.state();
      if (!st) return null;
      const added = this.#core.addGap({
        kind: "body_refused",
        bodies: [sha256],
        detail: `a ${role} body still held a credential (${kinds.join(", ")}) and was refused`,
      });
      return added ? this.#core.bump(st) : this.#core.summary(st);
    });
    if (s) await this.#schedule(s, Date.now());
    return s;
  }

  /** A page of stored frames from seq `from`: at most `limit`, and at most `core.ts` FRAMES_PAGE_CHARS of payload. */
  frames(from: number, limit: number): FramePage {
    return this.#core.framesPage(from, limit);
  }

  /** Where an export starts: the run and how far each table reached (see `chain/export.ts`); null when the object holds nothing. */
  exportHead(): ExportHead | null {
    return exportHead(this.ctx.storage.sql, this.#core);
  }

  /** One page of an export, below the bounds its head gave: read only, so it runs between ingest calls. */
  exportPage(req: ExportPageRequest): ExportPage {
    return exportPage(this.ctx.storage.sql, req);
  }

  /**
   * The object's one alarm: closes the run once it has been quiet for 12 hours (the spec's
   * quiet-run close), and sends its fleet row when that is due. A send that fails throws, so the
   * alarm is retried (with backoff); the next change sets it again in any case.
   */
  override async alarm(): Promise<void> {
    const now = Date.now();
    const st = this.#core.state();
    if (!st) return;
    let s = this.#core.summary(st);
    if (s.kind === "run" && s.status === "live" && (s.lastReceivedMs ?? 0) <= now - QUIET_MS) {
      s = this.ctx.storage.transactionSync(() => this.#core.close(now, QUIET_MS)) ?? s;
      await this.#stopped(st, s);
    }
    const due = projectionDue(this.ctx.storage.sql, s, this.#coalesceMs());
    if (due !== null && due <= now) {
      await project(this.env, [projectionMessage(this.ctx.storage.sql, s, now)]);
      this.ctx.storage.transactionSync(() => noteSent(this.ctx.storage.sql, s.version, s.status, now));
    }
    await this.#schedule(s, now);
  }

  /** Sets the alarm for the next thing due: the fleet row's send, or the quiet close of a live run. */
  async #schedule(s: ChainSummary, now: number): Promise<void> {
    const due = projectionDue(this.ctx.storage.sql, s, this.#coalesceMs());
    const quiet = s.kind === "run" && s.status === "live" ? (s.lastReceivedMs ?? now) + QUIET_MS : null;
    const next = Math.min(due ?? Number.POSITIVE_INFINITY, quiet ?? Number.POSITIVE_INFINITY);
    if (next === Number.POSITIVE_INFINITY) return;
    const at = Math.max(next, Date.now());
    const set = await this.ctx.storage.getAlarm();
    // An alarm set earlier stays: when it runs, it sets the next one.
    if (set !== null && set <= at) return;
    await this.ctx.storage.setAlarm(at);
  }

  #coalesceMs(): number {
    const ms = Number(this.env.OXAGEN_PROJECTION_MS);
    return Number.isFinite(ms) && ms >= 0 ? ms : DEFAULT_PROJECTION_MS;
  }
}
