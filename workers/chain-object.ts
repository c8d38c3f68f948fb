import { DurableObject } from "cloudflare:workers";
import type { CoverageFacts, Gap } from "../protocol/index.ts";
import { ChainCore } from "./chain/core.ts";
import { migrate } from "./chain/schema.ts";
import { type ExportHead, type ExportPage, type ExportPageRequest, exportHead, exportPage } from "./chain/export.ts";
import type { ChainIngest, ChainIngestResult, ChainSummary, FramePage } from "./chain/types.ts";
import { serverKey } from "./keys.ts";

/**
 * One run's chain, or one host's own chain (`host_<id>`): the only writer of it. Named by the chain
 * id (`env.CHAINS.idFromName(chain)`). The logic lives in {@link ChainCore}; every RPC below runs it
 * inside one synchronous transaction, so no `await` ever separates reading the head from writing.
 */
export class ChainObject extends DurableObject<Env> {
  readonly #core: ChainCore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#core = new ChainCore(ctx.storage.sql);
    void ctx.blockConcurrencyWhile(async () => migrate(ctx.storage));
  }

  /** Takes one chain's part of an ingest batch (frames, then locks) and answers its ack and summary. */
  ingest(part: ChainIngest): ChainIngestResult {
    return this.ctx.storage.transactionSync(() => this.#core.ingest(part));
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
  close(now: number, quietMs: number): ChainSummary | null {
    return this.ctx.storage.transactionSync(() => this.#core.close(now, quietMs));
  }

  /**
   * Seals the run: a final lock signed by the server key (unless a final lock is already stored),
   * status `sealed`, and gaps for what the record still lacks. Later frames are refused and
   * recorded as `frames_after_seal`. Idempotent.
   */
  seal(now: number): ChainSummary | null {
    const key = serverKey(this.env);
    return this.ctx.storage.transactionSync(() => this.#core.seal(now, key.secret));
  }

  /** Notes that a body the chain may name is stored in R2. */
  bodyReceived(sha256: string, now: number): void {
    this.#core.bodyReceived(sha256, now);
  }

  /** Records a body refused on the server's credential re-check as a `body_refused` gap. */
  bodyRefused(sha256: string, role: string, kinds: string[]): ChainSummary | null {
    return this.ctx.storage.transactionSync(() => {
      const st = this.#core.state();
      if (!st) return null;
      const added = this.#core.addGap({
        kind: "body_refused",
        bodies: [sha256],
        detail: `a ${role} body still held a credential (${kinds.join(", ")}) and was refused`,
      });
      return added ? this.#core.bump(st) : this.#core.summary(st);
    });
  }

  /** A page of stored frames from seq `from`. */
  frames(from: number, limit: number): FramePage {
    return this.#core.framesPage(from, limit);
  }

  /** Where an export starts: the run and how far each table reached (see `chain/export.ts`); null when the object holds nothing. */
  exportHead(): ExportHead | null {
    return exportHead(this.ctx.storage.sql, this.#core);
  }

  /**
   * Admits one signed request's nonce for this object's host (host chains only): true the first
   * time, false for a nonce already admitted (a replay). A nonce is kept until `expiresMs`, the end
   * of its request's time window; expired ones are dropped on the way.
   */
  admitNonce(nonce: string, expiresMs: number, now: number): boolean {
    return this.ctx.storage.transactionSync(() => {
      const sql = this.ctx.storage.sql;
      sql.exec("DELETE FROM nonces WHERE expires_ms < ?", now);
      return sql.exec("INSERT OR IGNORE INTO nonces (nonce, expires_ms) VALUES (?, ?)", nonce, expiresMs).rowsWritten > 0;
    });
  }

  /** One page of an export, below the bounds its head gave: read only, so it runs between ingest calls. */
  exportPage(req: ExportPageRequest): ExportPage {
    return exportPage(this.ctx.storage.sql, req);
  }
}
