import { DurableObject } from "cloudflare:workers";
import { signLock, lockHash, type Gap } from "../protocol/index.ts";
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

  /** The summary with every gap of the record (chain-derived, then the server's gap book). */
  detail(): { summary: ChainSummary; gaps: Gap[] } | null {
    const st = this.#core.state();
    return st ? { summary: this.#core.summary(st), gaps: this.#core.gaps(st) } : null;
  }

  /** Closes the run if it is live and has had no frame for `quietMs` (server clock); the next frame reopens it. */
  close(now: number, quietMs: number): ChainSummary | null {
    return this.ctx.storage.transactionSync(() => this.#core.close(now, quietMs));
  }

  /**
   * Seals the run: a final lock signed by the server (unless a final lock is already stored),
   * status `sealed`, and gaps for what the record still lacks (held frames, bodies never received).
   * Later frames are refused and recorded as `frames_after_seal`. Idempotent.
   */
  seal(now: number): ChainSummary | null {
    return this.ctx.storage.transactionSync(() => {
      const st = this.#core.state();
      if (!st) return null;
      if (st.sealed) return this.#core.summary(st);
      const held = this.ctx.storage.sql.exec<{ lo: number | null; n: number }>("SELECT min(seq) AS lo, count(*) AS n FROM held").one();
      if (held.n > 0 && held.lo !== null) {
        this.#core.addGap({
          kind: "missing_frames",
          from_seq: st.count,
          to_seq: held.lo - 1,
          count: held.lo - st.count,
          detail: `frames ${st.count} to ${held.lo - 1} never arrived before the seal`,
        });
      }
      const bodies = this.#core.missingBodiesGap();
      if (bodies) this.#core.addGap(bodies);
      if (!st.final) {
        const key = serverKey(this.env);
        const lock = signLock(
          {
            chain: st.chain,
            lock_seq: st.lockNext,
            count: st.count,
            head: st.head,
            prev_lock: st.lastLock,
            t: now,
            final: true,
            signer: "server",
            host: st.hostId,
          },
          key.secret,
        );
        this.ctx.storage.sql.exec(
          "INSERT INTO locks (lock_seq, payload, sig, count, final, received_ms) VALUES (?, ?, ?, ?, 1, ?)",
          st.lockNext,
          lock.payload,
          lock.sig,
          st.count,
          now,
        );
        st.lockNext++;
        st.lastLock = lockHash(lock);
        st.lockedCount = st.count;
        st.final = true;
      }
      st.sealed = true;
      st.status = "sealed";
      return this.#core.bump(st);
    });
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

  /** One page of an export, below the bounds its head gave: read only, so it runs between ingest calls. */
  exportPage(req: ExportPageRequest): ExportPage {
    return exportPage(this.ctx.storage.sql, req);
  }
}
