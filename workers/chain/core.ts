import {
  addCoverage,
  bodyMentions,
  bytesToHex,
  type ChainAck,
  chainGaps,
  coverageFacts,
  enforcementTier,
  type Frame,
  frameHash,
  fromHex,
  type Gap,
  type ParsedPayload,
  parseLock,
  replayGrade,
  signLock,
} from "../../protocol/index.ts";
import { heldRange, storeLock, takeLocks } from "./locks.ts";
import { deriveOutcome, loadReading, readFrame, saveReading } from "./outcome.ts";
import { type ChainState, loadState, newState, saveState } from "./state.ts";
import { callPrice, PRICE_TABLE_VERSION, type RecordedUsage, utcDay } from "../spend/price.ts";
import type { ChainIngest, ChainIngestResult, ChainSummary, FramePage, SpendTotal } from "./types.ts";

const FLAG_GAPS = 1;
/** Frame flag: the payload names a kept body (see `missingBodies`, and the export's missing bodies). */
export const FLAG_KEPT_BODIES = 2;
/** Frame flag: an `llm_call` the gateway recorded (the `gateway` tier needs one under a host lock). */
const FLAG_GATEWAY_CALL = 4;
const MAX_EVIDENCE = 70_000;
const MAX_MISSING_RANGES = 100;

interface FrameRow extends Record<string, SqlStorageValue> {
  seq: number;
  t: number;
  kind: string;
  payload: string;
}

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

  ingest(part: ChainIngest): ChainIngestResult {
    const existing = this.state();
    const st = existing ?? newState(part.init);
    if (st.chain !== part.init.chain) throw new Error(`object holds ${st.chain}, not ${part.init.chain}`);
    const ack: ChainAck = {
      chain: st.chain,
      status: "accepted",
      stored: 0,
      duplicates: [],
      missing: [],
      held: 0,
      conflicts: [],
      locks_stored: 0,
      locks_refused: [],
    };
    let changed = existing === null;
    const appended: { frame: Frame; payload: ParsedPayload }[] = [];
    const priced = new Set<string>();
    const refused: number[] = [];
    let head = fromHex(st.head, 32);
    const reading = loadReading(this.#sql);
    const append = (frame: Frame, now: number) => {
      const hash = frameHash(st.chain, frame, head);
      const payload = JSON.parse(frame.payload) as ParsedPayload;
      this.#sql.exec(
        "INSERT INTO frames (seq, t, kind, payload, hash, received_ms, flags) VALUES (?, ?, ?, ?, ?, ?, ?)",
        frame.seq,
        frame.t,
        frame.kind,
        frame.payload,
        bytesToHex(hash),
        now,
        flagsOf(frame.kind, payload),
      );
      head = hash;
      st.count++;
      appended.push({ frame, payload });
      this.#applyLifecycle(st, frame, payload, now);
      readFrame(reading, frame.seq, frame.kind, payload);
      if (frame.kind === "llm_call") priced.add(this.#price(st, payload, now));
    };
    const frames = [...part.frames].sort((a, b) => a.seq - b.seq);
    let heldCount = this.#sql.exec<{ n: number }>("SELECT count(*) AS n FROM held").one().n;
    for (const frame of frames) {
      if (frame.seq < st.count) {
        const stored = this.#sql.exec<FrameRow>("SELECT seq, t, kind, payload FROM frames WHERE seq = ?", frame.seq).one();
        if (sameFrame(stored, frame)) ack.duplicates.push(frame.seq);
        else {
          ack.conflicts.push(frame.seq);
          changed = this.#equivocate(frame, part.now) || changed;
        }
      } else if (st.final) {
        refused.push(frame.seq);
        // Still news from the computer: the session goes on (or ends) there, though the record is closed.
        st.lastReceivedMs = part.now;
        if (frame.kind === "agent_stop") st.hostStopped = true;
      } else if (frame.seq === st.count) {
        append(frame, part.now);
        // Most batches arrive in order: skip the lookup for a held successor when nothing is held.
        while (heldCount > 0) {
          const next = this.#sql.exec<FrameRow>("SELECT seq, t, kind, payload FROM held WHERE seq = ?", st.count).toArray()[0];
          if (!next) break;
          this.#sql.exec("DELETE FROM held WHERE seq = ?", next.seq);
          heldCount--;
          append(next, part.now);
        }
      } else {
        const held = this.#sql.exec<FrameRow>("SELECT seq, t, kind, payload FROM held WHERE seq = ?", frame.seq).toArray()[0];
        if (!held) {
          this.#sql.exec(
            "INSERT INTO held (seq, t, kind, payload, received_ms) VALUES (?, ?, ?, ?, ?)",
            frame.seq,
            frame.t,
            frame.kind,
            frame.payload,
            part.now,
          );
          heldCount++;
          changed = true;
        } else if (sameFrame(held, frame)) ack.duplicates.push(frame.seq);
        else {
          ack.conflicts.push(frame.seq);
          changed = this.#equivocate(frame, part.now) || changed;
        }
      }
    }
    if (refused.length > 0) {
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
      changed = true;
      ack.status = "refused";
      ack.message = `${refused.length} frames refused: ${why}`;
    }
    if (appended.length > 0) {
      saveReading(this.#sql, reading);
      st.head = bytesToHex(head);
      st.facts = addCoverage(
        st.facts,
        coverageFacts(
          appended.map((a) => a.frame.kind),
          appended.map((a) => a.payload),
        ),
      );
      changed = true;
    }
    changed = takeLocks(this.#lockStore(), st, part.locks, part.init.hostKeys, part.now, ack) || changed;
    const heldSeqs = this.#sql
      .exec<{ seq: number }>("SELECT seq FROM held ORDER BY seq")
      .toArray()
      .map((r) => r.seq);
    ack.held = heldSeqs.length;
    ack.missing = missingRanges(st.count, heldSeqs);
    ack.stored = st.count;
    if (changed) {
      st.version++;
      saveState(this.#sql, st);
    }
    const spend = this.#spendTotals(priced);
    const days = [...new Set(spend.map((t) => t.day))];
    const spendDays = days.map((day) => ({
      day,
      microusd: this.#sql.exec<{ n: number }>("SELECT sum(microusd) AS n FROM spend WHERE day = ?", day).one().n,
    }));
    return { ack, summary: this.summary(st), spend, spendDays };
  }

  /**
   * Prices one appended llm_call from the usage it holds, with the bundled price table, at the
   * server's time of receipt; adds it to its day's total. Returns that total's key.
   */
  #price(st: ChainState, payload: ParsedPayload, now: number): string {
    const vendor = String(payload.vendor);
    const model = String(payload.model);
    const usage = payload.usage as unknown as RecordedUsage;
    const micro = callPrice(payload, now);
    const day = utcDay(now);
    const version = micro === null ? "" : PRICE_TABLE_VERSION;
    if (micro !== null) st.spend += micro;
    this.#sql.exec(
      `INSERT INTO spend (day, vendor, model, price_version, calls, unpriced_calls, microusd, input_tokens, output_tokens,
         cache_read_tokens, cache_write_tokens) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (day, vendor, model, price_version) DO UPDATE SET calls = calls + 1,
         unpriced_calls = unpriced_calls + excluded.unpriced_calls, microusd = microusd + excluded.microusd,
         input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
         cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens, cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens`,
      day,
      vendor,
      model,
      version,
      micro === null ? 1 : 0,
      micro ?? 0,
      usage.input_tokens,
      usage.output_tokens,
      usage.cache_read_tokens ?? 0,
      usage.cache_write_tokens ?? 0,
    );
    return JSON.stringify([day, vendor, model, version]);
  }

  /** The chain's spend totals: all of them, or those of the given keys. */
  #spendTotals(keys?: Set<string>): SpendTotal[] {
    if (keys && keys.size === 0) return [];
    const rows = this.#sql
      .exec<Record<string, SqlStorageValue>>("SELECT * FROM spend ORDER BY day, vendor, model, price_version")
      .toArray();
    return rows
      .filter((r) => !keys || keys.has(JSON.stringify([r.day, r.vendor, r.model, r.price_version])))
      .map((r) => ({
        day: String(r.day),
        vendor: String(r.vendor),
        model: String(r.model),
        priceVersion: String(r.price_version),
        calls: Number(r.calls),
        unpricedCalls: Number(r.unpriced_calls),
        microusd: Number(r.microusd),
        inputTokens: Number(r.input_tokens),
        outputTokens: Number(r.output_tokens),
        cacheReadTokens: Number(r.cache_read_tokens),
        cacheWriteTokens: Number(r.cache_write_tokens),
      }));
  }

  /** Every spend total of the chain. */
  spendTotals(): SpendTotal[] {
    return this.#spendTotals();
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
    const bodies = this.missingBodiesGap();
    if (bodies) this.addGap(bodies);
    if (!st.final) {
      const fields = { chain: st.chain, lock_seq: st.lockNext, count: st.count, head: st.head, prev_lock: st.lastLock };
      const lock = signLock({ ...fields, t: now, final: true, signer: "server", host: st.hostId }, serverSecret);
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

  /** Kept bodies the chain names that never arrived. */
  missingBodies(): string[] {
    const rows = this.#sql.exec<FrameRow>(`SELECT seq, t, kind, payload FROM frames WHERE flags & ${FLAG_KEPT_BODIES}`).toArray();
    const named = new Set(
      bodyMentions(rows.map((r) => JSON.parse(r.payload) as ParsedPayload))
        .filter((m) => m.kept)
        .map((m) => m.sha256),
    );
    const missing: string[] = [];
    for (const sha of named) {
      if (this.#sql.exec("SELECT 1 FROM bodies WHERE sha256 = ?", sha).toArray().length === 0) missing.push(sha);
    }
    return missing.sort();
  }

  missingBodiesGap(): Gap | null {
    const missing = this.missingBodies();
    if (missing.length === 0) return null;
    return {
      kind: "missing_bodies",
      source: "server",
      bodies: missing,
      detail: `${missing.length} kept bodies named by the record never reached the server`,
    };
  }

  bodyReceived(sha256: string, now: number): void {
    this.#sql.exec("INSERT OR IGNORE INTO bodies (sha256, received_ms) VALUES (?, ?)", sha256, now);
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
      unpricedCalls: this.#sql.exec<{ n: number | null }>("SELECT sum(unpriced_calls) AS n FROM spend").one().n ?? 0,
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

function sameFrame(a: FrameRow, b: Frame): boolean {
  return a.t === b.t && a.kind === b.kind && a.payload === b.payload;
}

function flagsOf(kind: string, payload: ParsedPayload): number {
  let flags = kind === "telemetry_gap" || kind === "agent_stop" ? FLAG_GAPS : 0;
  const mentions = bodyMentions([payload]);
  if (mentions.some((m) => !m.kept)) flags |= FLAG_GAPS;
  if (mentions.some((m) => m.kept)) flags |= FLAG_KEPT_BODIES;
  if (kind === "llm_call" && payload.path === "gateway") flags |= FLAG_GATEWAY_CALL;
  return flags;
}

function missingRanges(count: number, held: number[]): [number, number][] {
  const out: [number, number][] = [];
  let next = count;
  for (const seq of held) {
    if (seq > next && out.length < MAX_MISSING_RANGES) out.push([next, seq - 1]);
    next = seq + 1;
  }
  return out;
}
