import {
  addCoverage,
  bytesToHex,
  type ChainAck,
  ChainWriter,
  chainAck,
  chainGaps,
  coverageFacts,
  enforcementTier,
  type Frame,
  type Gap,
  type ParsedPayload,
  parseLock,
  replayGrade,
} from "../../protocol/index.ts";
import { bodyReceived, missingBodiesGap } from "./bodies.ts";
import { FLAG_GAPS, FLAG_GATEWAY_CALL, type FrameRow, heldAndMissing, takeFrames } from "./frames.ts";
import { heldRange, storeLock, takeLocks } from "./locks.ts";
import { priceAppendedCall, spendDays, spendTotals, unpricedCalls } from "./spend.ts";
import { type ChainState, loadState, newState, saveState } from "./state.ts";
import { deriveOutcome, loadReading, readFrame, saveReading } from "./outcome.ts";
import type { ChainIngest, ChainIngestResult, ChainSummary, FramePage, SpendTotal } from "./types.ts";

const MAX_EVIDENCE = 70_000;

/**
 * The logic of one chain over its SQLite storage. Every method is synchronous: the caller runs it
 * inside one `transactionSync`, so reading the head, hashing and writing can never interleave with
 * another call and two batches cannot fork the chain.
 */
export class ChainCore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  state(): ChainState | null {
    return loadState(this.#sql);
  }

  /** Takes one chain's part of a batch: its frames, then its locks; answers the ack, the summary and the spend the part added. */
  ingest(part: ChainIngest): ChainIngestResult {
    const existing = this.state();
    const st = existing ?? newState(part.init);
    if (st.chain !== part.init.chain) throw new Error(`object holds ${st.chain}, not ${part.init.chain}`);
    const ack = chainAck(st.chain, "accepted");
    const appended: { kind: string; payload: ParsedPayload }[] = [];
    const priced = new Set<string>();
    const reading = loadReading(this.#sql);
    const frames = takeFrames(
      {
        sql: this.#sql,
        appended: (frame, payload) => {
          appended.push({ kind: frame.kind, payload });
          this.#applyLifecycle(st, frame, payload, part.now);
          readFrame(reading, frame.seq, frame.kind, payload);
          if (frame.kind === "llm_call") priced.add(priceAppendedCall(this.#sql, st, payload, part.now));
        },
        equivocate: (frame) => this.#equivocate(frame, part.now),
      },
      st,
      part.frames,
      part.now,
      ack,
    );
    let changed = existing === null || frames.changed;
    if (frames.refused.length > 0) {
      this.#refusedAfterFinal(st, frames.refused, ack);
      changed = true;
    }
    if (appended.length > 0) {
      saveReading(this.#sql, reading);
      st.head = bytesToHex(frames.head);
      st.facts = addCoverage(
        st.facts,
        coverageFacts(
          appended.map((a) => a.kind),
          appended.map((a) => a.payload),
        ),
      );
      changed = true;
    }
    changed = takeLocks(this.#lockStore(), st, part.locks, part.init.hostKeys, part.now, ack) || changed;
    Object.assign(ack, heldAndMissing(this.#sql, st.count), { stored: st.count });
    if (changed) {
      st.version++;
      saveState(this.#sql, st);
    }
    const spend = spendTotals(this.#sql, priced);
    return { ack, summary: this.summary(st), spend, spendDays: spendDays(this.#sql, spend) };
  }

  // Frames that arrived after a final lock: refused, with the gap that says so.
  #refusedAfterFinal(st: ChainState, refused: readonly number[], ack: ChainAck): void {
    const from = refused[0]!;
    const to = refused.at(-1)!;
    const kind = st.sealed ? "frames_after_seal" : "broken_chain";
    const why = st.sealed ? "the run was sealed by an operator" : "the chain has a final lock";
    this.addGap({
      kind,
      from_seq: from,
      to_seq: to,
      count: refused.length,
      detail: `frames ${from} to ${to} arrived after ${why}; they were refused`,
    });
    ack.status = "refused";
    ack.message = `${refused.length} frames refused: ${why}`;
  }

  /** Every spend total of the chain. */
  spendTotals(): SpendTotal[] {
    return spendTotals(this.#sql);
  }

  /** Closes a live run quiet since `now - quietMs` (server clock) with outcome unknown. */
  close(now: number, quietMs: number): ChainSummary | null {
    const st = this.state();
    if (!st) return null;
    if (st.kind === "run" && st.status === "live" && (st.lastReceivedMs ?? 0) <= now - quietMs) {
      st.status = "closed";
      st.outcome = "unknown";
      st.version++;
      saveState(this.#sql, st);
    }
    return this.summary(st);
  }

  /**
   * Seals the run: a final lock signed by the server (unless a final lock is already stored),
   * status `sealed`, and gaps for what the record still lacks (the hole before held frames, the
   * held frames themselves, bodies never received). Idempotent.
   */
  seal(now: number, serverSecret: Uint8Array): ChainSummary | null {
    const st = this.state();
    if (!st) return null;
    if (st.sealed) return this.summary(st);
    const held = heldRange(this.#sql);
    if (held) {
      this.addGap({
        kind: "missing_frames",
        from_seq: st.count,
        to_seq: held.lo - 1,
        count: held.lo - st.count,
        detail: `frames ${st.count} to ${held.lo - 1} never arrived before the seal`,
      });
      this.addGap({
        kind: "broken_chain",
        from_seq: held.lo,
        to_seq: held.hi,
        count: held.n,
        detail: `${held.n} frames (seq ${held.lo} to ${held.hi}) arrived beyond the hole; they cannot join the chain and are outside the sealed record`,
      });
    }
    const bodies = missingBodiesGap(this.#sql, st.count);
    if (bodies) this.addGap(bodies);
    if (!st.final) {
      // The chain's writer signs the seal, exactly as the computer's signs its locks.
      const writer = new ChainWriter({
        chain: st.chain,
        count: st.count,
        head: st.head,
        lockSeq: st.lockNext,
        lastLockHash: st.lastLock,
        lockedCount: st.lockedCount,
        final: false,
      });
      const lock = writer.lock({ secretKey: serverSecret, hostId: st.hostId, t: now, final: true, signer: "server" })!;
      storeLock(this.#sql, st, lock, parseLock(lock), now);
    }
    st.sealed = true;
    st.status = "sealed";
    return this.bump(st);
  }

  addGap(gap: Omit<Gap, "source">): boolean {
    const { kind, ...rest } = gap;
    const text = JSON.stringify({ kind, source: "server", ...rest });
    return this.#sql.exec("INSERT OR IGNORE INTO gaps (gap, created_ms) VALUES (?, ?)", text, Date.now()).rowsWritten > 0;
  }

  serverGaps(): Gap[] {
    return this.#sql
      .exec<{ gap: string }>("SELECT gap FROM gaps ORDER BY id")
      .toArray()
      .map((r) => JSON.parse(r.gap) as Gap);
  }

  bodyReceived(sha256: string, now: number): void {
    bodyReceived(this.#sql, sha256, now);
  }

  bump(st: ChainState): ChainSummary {
    st.version++;
    saveState(this.#sql, st);
    return this.summary(st);
  }

  /** Every gap of the record: the chain's own (derived), then the server's gap book. */
  gaps(st: ChainState): Gap[] {
    return [...this.#chainGaps(st), ...this.serverGaps()];
  }

  summary(st: ChainState): ChainSummary {
    const gaps = this.gaps(st);
    const assessed = {
      facts: st.facts,
      gaps,
      environment: "customer_computer" as const,
      mode: st.mode,
      gatewayLocked: this.#gatewayLocked(st),
    };
    const reading = loadReading(this.#sql);
    return {
      chain: st.chain,
      kind: st.kind,
      workspace: st.workspace,
      hostId: st.hostId,
      harness: st.harness,
      agent: st.agent,
      sessionId: st.sessionId,
      status: st.status,
      outcome: st.outcome,
      derived: deriveOutcome({ status: st.status, recorded: st.outcome, reading }),
      modelCalls: reading.modelOk + reading.modelFailed,
      modelFailed: reading.modelFailed,
      tier: enforcementTier(assessed),
      grade: replayGrade(assessed),
      spendMicrousd: st.spend,
      unpricedCalls: unpricedCalls(this.#sql),
      frameCount: st.count,
      lockCount: st.lockNext,
      gapCount: gaps.length,
      heldCount: this.#sql.exec<{ n: number }>("SELECT count(*) AS n FROM held").one().n,
      hostStopped: st.hostStopped,
      firstFrameMs: st.firstMs,
      lastFrameMs: st.lastMs,
      lastReceivedMs: st.lastReceivedMs,
      version: st.version,
    };
  }

  /**
   * Whether a model call the gateway carried is under one of the host's locks: a frame the computer
   * wrote but has not locked yet does not lift the tier. Stops at the first such frame (by seq).
   */
  #gatewayLocked(st: ChainState): boolean {
    if (st.facts.llm_calls_gateway === 0) return false;
    const first = this.#sql
      .exec<{ seq: number }>(`SELECT seq FROM frames WHERE flags & ${FLAG_GATEWAY_CALL} ORDER BY seq LIMIT 1`)
      .toArray()[0];
    return first !== undefined && first.seq < st.lockedCount;
  }

  framesPage(from: number, limit: number): FramePage {
    const rows = this.#sql
      .exec<FrameRow & { hash: string; received_ms: number }>(
        "SELECT seq, t, kind, payload, hash, received_ms FROM frames WHERE seq >= ? ORDER BY seq LIMIT ?",
        from,
        limit + 1,
      )
      .toArray();
    const next = rows.length > limit ? rows[limit]!.seq : null;
    return {
      frames: rows
        .slice(0, limit)
        .map((r) => ({ seq: r.seq, t: r.t, kind: r.kind, payload: r.payload, hash: r.hash, received_ms: r.received_ms })),
      next,
    };
  }

  #lockStore() {
    return {
      sql: this.#sql,
      addGap: (gap: Omit<Gap, "source">) => this.addGap(gap),
      addEquivocation: (what: "lock", seq: number, evidence: string) => this.#addEquivocation(what, seq, evidence, Date.now()),
    };
  }

  #equivocate(frame: Frame, now: number): boolean {
    if (!this.#addEquivocation("frame", frame.seq, JSON.stringify(frame), now)) return false;
    this.addGap({
      kind: "equivocation",
      seq: frame.seq,
      detail: `a second, different frame ${frame.seq} arrived; it is kept as evidence, never appended`,
    });
    return true;
  }

  #addEquivocation(what: "frame" | "lock", seq: number, evidence: string, now: number): boolean {
    const text = evidence.length > MAX_EVIDENCE ? JSON.stringify({ truncated: true, head: evidence.slice(0, 1000) }) : evidence;
    return (
      this.#sql.exec("INSERT OR IGNORE INTO equivocations (what, seq, evidence, received_ms) VALUES (?, ?, ?, ?)", what, seq, text, now)
        .rowsWritten > 0
    );
  }

  #applyLifecycle(st: ChainState, frame: Frame, payload: ParsedPayload, now: number): void {
    st.firstMs ??= frame.t;
    st.lastMs = Math.max(st.lastMs ?? 0, frame.t);
    st.lastReceivedMs = now;
    if (st.kind !== "run") return;
    if (st.status === "closed") {
      st.status = "live";
      st.outcome = null;
    }
    if (frame.kind === "agent_stop") {
      st.hostStopped = true;
      st.outcome = String(payload.outcome);
      st.status = payload.outcome === "crashed" ? "crashed" : "ended";
    } else if (frame.kind === "telemetry_gap" && payload.cause === "unobserved_tail" && st.status === "live") {
      st.status = "crashed";
      st.outcome = "crashed";
    }
  }

  /** The chain's own gaps, derived by protocol `chainGaps` from only the frames that can carry one. */
  #chainGaps(st: ChainState): Gap[] {
    const kinds: string[] = new Array<string>(st.count);
    const payloads: (ParsedPayload | null)[] = new Array<ParsedPayload | null>(st.count);
    for (const r of this.#sql.exec<FrameRow>(`SELECT seq, t, kind, payload FROM frames WHERE flags & ${FLAG_GAPS}`)) {
      kinds[r.seq] = r.kind;
      payloads[r.seq] = JSON.parse(r.payload) as ParsedPayload;
    }
    return chainGaps(kinds, payloads);
  }
}
