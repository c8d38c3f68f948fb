import {
  BODY_HEADERS,
  type ChainAck,
  encodeUpload,
  IngestAnswer,
  type IngestRequest,
  MAX_BATCH_CHAINS,
  MAX_BATCH_FRAMES,
  MAX_UPLOAD_BODIES,
  MAX_UPLOAD_BYTES,
  ROUTES,
  type SignedLock,
  UPLOAD_PART_OVERHEAD,
  UploadAnswer,
  type UploadBody,
  utf8,
} from "../../protocol/index.ts";
import { hostFetch } from "../lib/server.ts";
import type { HostConfig } from "../lib/state.ts";
import { lockSeqOf, type ChainRecord, type Journal, type JournalFrame } from "./journal/index.ts";

export interface ShipperOptions {
  /** First retry delay (default 1 s); each next one ×1.5 ±20 %, up to `maxMs` (default 60 s). */
  baseMs: number;
  maxMs: number;
  /** How long after new frames a batch leaves (so one batch carries a burst). */
  delayMs: number;
  log: (msg: string) => void;
}

const BATCH_BYTES = 6 * 1024 * 1024;
const RETRYABLE = new Set([429, 502, 503, 504]);
// An upload refused as a whole by one of its parts (hash, role or size): resending it as it is cannot help.
const UPLOAD_FINAL = new Set([400, 413]);

class Retry extends Error {
  readonly afterMs: number | null;
  /** The answer's text, for a 429 that may name the chains over a quota. */
  readonly answer: string | null;
  constructor(message: string, afterMs: number | null, answer: string | null = null) {
    super(message);
    this.afterMs = afterMs;
    this.answer = answer;
  }
}

/** Seconds or an HTTP date, in ms from now; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

interface Batch {
  body: IngestRequest;
  recs: Map<string, { rec: ChainRecord; hi: number; locks: SignedLock[] }>;
}

/** What was sent of a chain and not yet fully acknowledged: the highest seq sent and the holes the server named. */
interface Sent {
  hi: number;
  missing: [number, number][];
  locksHi: number;
}

/**
 * Ships the journal to the server: frame/lock batches to /v1/ingest, then kept bodies, up to 64 of
 * a run per request, to /v1/bodies. Retries network errors and 429/502/503/504 with jittered backoff and
 * Retry-After; other failures are surfaced as `lastError` and retried at the longest delay, since
 * nothing leaves the journal until the server acknowledged it.
 */
export class Shipper {
  lastDeliveryMs: number | null = null;
  lastError: string | null = null;
  readonly #journal: Journal;
  readonly #host: HostConfig;
  readonly #opts: ShipperOptions;
  readonly #sent = new Map<string, Sent>();
  readonly #refusedUntil = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #backoff = 0;
  #stopped = false;
  #again = false;
  readonly #abort = new AbortController();

  constructor(journal: Journal, host: HostConfig, opts: ShipperOptions) {
    this.#journal = journal;
    this.#host = host;
    this.#opts = opts;
  }

  /** Asks for a shipment soon (no-op while one is waiting on a backoff). */
  kick(delayMs = this.#opts.delayMs): void {
    if (this.#stopped || this.#timer) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#cycle().then((next) => {
        this.#running = null;
        const again = this.#again;
        this.#again = false;
        if (next !== null) this.kick(next);
        else if (again) this.kick();
      });
    }, delayMs);
    this.#timer.unref();
  }

  /**
   * Stops; waits for a shipment in flight (whose acks are journaled) to finish, for at most
   * `graceMs` when given: then it is abandoned, and what it carried stays in the journal for the
   * next start (the server keeps a frame once, however often it arrives).
   */
  async stop(graceMs?: number): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (!this.#running) return;
    const abandon =
      graceMs === undefined ? undefined : setTimeout(() => this.#abort.abort(new Error("the recorder is stopping")), Math.max(0, graceMs));
    try {
      await this.#running;
    } finally {
      clearTimeout(abandon);
    }
  }

  /** Frames, locks and bodies not yet acknowledged. */
  pending(): { frames: number; locks: number; bodies: number } {
    let frames = 0,
      locks = 0,
      bodies = 0;
    for (const rec of this.#journal.chains.values()) {
      frames += rec.frames.length;
      locks += rec.locks.length;
      bodies += rec.bodies.length;
    }
    return { frames, locks, bodies };
  }

  /** One shipment; returns when to try again (a backoff), or null when all that could go went. */
  async #cycle(): Promise<number | null> {
    try {
      for (let rounds = 0; rounds < 1000 && !this.#stopped; rounds++) {
        const batch = this.#batch();
        if (!batch) break;
        await this.#ship(batch);
      }
      if (!this.#stopped) await this.#shipBodies();
      this.#backoff = 0;
      return this.#refusedUntil.size ? this.#opts.maxMs : null;
    } catch (err) {
      const retry = err instanceof Retry ? err.afterMs : null;
      this.lastError = (err as Error).message;
      if (this.#stopped) {
        this.#opts.log(`ship: ${this.lastError}; what it carried stays in the journal for the next start`);
        return null;
      }
      this.#backoff = this.#backoff === 0 ? this.#opts.baseMs : Math.min(this.#backoff * 1.5, this.#opts.maxMs);
      const jittered = Math.min(this.#backoff * (0.8 + Math.random() * 0.4), this.#opts.maxMs);
      const wait = retry !== null ? Math.min(Math.max(retry, 0), 10 * this.#opts.maxMs) : jittered;
      this.#opts.log(`ship: ${this.lastError}; retrying in ${Math.round(wait)} ms`);
      return wait;
    }
  }

  #framesToSend(rec: ChainRecord): JournalFrame[] {
    const sent = this.#sent.get(rec.chain);
    if (!sent) return rec.frames;
    return rec.frames.filter((f) => f.seq > sent.hi || sent.missing.some(([a, b]) => f.seq >= a && f.seq <= b));
  }

  #batch(): Batch | null {
    const chains: IngestRequest["chains"] = [];
    const recs = new Map<string, { rec: ChainRecord; hi: number; locks: SignedLock[] }>();
    let bytes = 0;
    const now = Date.now();
    for (const rec of this.#journal.chains.values()) {
      if (chains.length >= MAX_BATCH_CHAINS || bytes >= BATCH_BYTES) break;
      if ((this.#refusedUntil.get(rec.chain) ?? 0) > now) continue;
      const frames: JournalFrame[] = [];
      for (const f of this.#framesToSend(rec)) {
        if (frames.length >= MAX_BATCH_FRAMES || bytes + f.payload.length + 200 > BATCH_BYTES) break;
        frames.push(f);
        bytes += f.payload.length + 200;
      }
      const locksHi = this.#sent.get(rec.chain)?.locksHi ?? -1;
      const locks = frames.length || rec.locks.some((l) => lockSeqOf(l) > locksHi) ? rec.locks.slice(0, 1000) : [];
      if (!frames.length && !locks.length) continue;
      bytes += locks.length * 700;
      const part: IngestRequest["chains"][number] = {
        chain: rec.chain,
        frames: frames.map(({ seq, t, kind, payload }) => ({ seq, t, kind, payload })),
        locks,
      };
      if (rec.run) part.run = rec.run;
      chains.push(part);
      const prev = this.#sent.get(rec.chain)?.hi ?? rec.stored - 1;
      recs.set(rec.chain, { rec, hi: Math.max(prev, frames.at(-1)?.seq ?? -1), locks });
    }
    return chains.length ? { body: { chains }, recs } : null;
  }

  async #post(path: string, method: "POST" | "PUT", body: Uint8Array, headers: Record<string, string>): Promise<Response> {
    let res: Response;
    try {
      res = await hostFetch(this.#host, path, { method, body, headers, timeoutMs: 60_000, signal: this.#abort.signal });
    } catch (err) {
      throw new Retry(`${method} ${path}: ${(err as Error & { cause?: Error }).cause?.message ?? (err as Error).message}`, null);
    }
    if (RETRYABLE.has(res.status) || res.status >= 500) {
      const after = RETRYABLE.has(res.status) ? retryAfterMs(res.headers.get("retry-after"), Date.now()) : null;
      const answer = res.status === 429 ? await res.text().catch(() => null) : null;
      if (answer === null) await res.body?.cancel();
      throw new Retry(`${method} ${path}: HTTP ${res.status}${answer ? ` ${answer.slice(0, 300)}` : ""}`, after, answer);
    }
    return res;
  }

  async #ship(batch: Batch): Promise<void> {
    for (const chain of batch.recs.keys()) this.#sent.delete(chain);
    let res: Response;
    try {
      res = await this.#post(ROUTES.ingest, "POST", utf8(JSON.stringify(batch.body)), { "content-type": "application/json" });
    } catch (err) {
      // Over a quota (429) for some chains: those wait out Retry-After, the others go in the next batch.
      const named = err instanceof Retry && err.answer ? refusedChains(safeJson(err.answer), batch.recs, "quota_exceeded") : null;
      if (!named) throw err;
      const until = Date.now() + ((err as Retry).afterMs ?? this.#opts.maxMs);
      for (const chain of named) this.#refusedUntil.set(chain, until);
      this.lastError = (err as Retry).message;
      this.#opts.log(`ship: ${this.lastError}; the other chains go on`);
      return;
    }
    const text = await res.text();
    if (!res.ok) {
      // Not retryable by its status: it will not succeed as it is. Keep everything and surface it.
      // When the server names the chains at fault, only they wait; the others go in the next batch.
      const named = refusedChains(safeJson(text), batch.recs);
      for (const chain of named ?? batch.recs.keys()) this.#refusedUntil.set(chain, Date.now() + this.#opts.maxMs);
      const why = `ingest refused: HTTP ${res.status} ${text.slice(0, 300)}`;
      if (!named) throw new Retry(why, this.#opts.maxMs);
      this.lastError = why;
      this.#opts.log(`ship: ${why}; the other chains go on`);
      return;
    }
    const answer = IngestAnswer.safeParse(safeJson(text));
    if (!answer.success) throw new Retry("ingest answer is not an IngestAnswer", null);
    let retry = false;
    for (const ack of answer.data.chains) retry = this.#take(ack, batch.recs.get(ack.chain)) || retry;
    this.lastDeliveryMs = Date.now();
    if (retry) throw new Retry("the server asked to retry a chain", null);
  }

  /** Applies one chain's ack; true when the server asked for a retry. */
  #take(ack: ChainAck, sent: { rec: ChainRecord; hi: number; locks: SignedLock[] } | undefined): boolean {
    if (!sent) return false;
    const { rec } = sent;
    if (ack.status === "refused") {
      this.lastError = `chain ${rec.chain} refused: ${ack.message ?? "no reason given"}`;
      this.#refusedUntil.set(rec.chain, Date.now() + this.#opts.maxMs);
      return false;
    }
    this.#refusedUntil.delete(rec.chain);
    const refused = new Map(ack.locks_refused.map((r) => [r.lock_seq, r.reason]));
    const acked: number[] = [];
    let keeping = false;
    for (const lock of sent.locks) {
      const seq = lockSeqOf(lock);
      const why = refused.get(seq);
      if (why === undefined && !keeping) acked.push(seq);
      else if (why !== undefined && !keeping && (JSON.parse(lock.payload) as { count: number }).count <= ack.stored) {
        // Refused although the server holds its frames: resending cannot help. It stays a finding on the server.
        this.lastError = `lock ${seq} of ${rec.chain} refused: ${why}`;
        acked.push(seq);
      } else keeping = true;
    }
    this.#journal.ack(rec, ack.stored, acked, []);
    if (ack.status === "retryable") return true;
    if (ack.missing.length === 0 && ack.held === 0 && rec.locks.length === 0) return false;
    const locksHi = sent.locks.length ? lockSeqOf(sent.locks.at(-1)!) : (this.#sent.get(rec.chain)?.locksHi ?? -1);
    this.#sent.set(rec.chain, { hi: sent.hi, missing: ack.missing, locksHi });
    return false;
  }

  /** Each chain's bodies whose frames the server holds, in uploads as large as the server takes. */
  async #shipBodies(): Promise<void> {
    for (const rec of this.#journal.chains.values()) {
      const due = new Map<string, UploadBody["role"]>();
      for (const b of rec.bodies) if (b.seq < rec.stored && !due.has(b.sha)) due.set(b.sha, b.role as UploadBody["role"]);
      const gone: string[] = [];
      let parts: Part[] = [];
      let bytes = 0;
      for (const [sha, role] of due) {
        if (this.#stopped) return;
        const body = this.#journal.body(sha);
        if (!body) {
          gone.push(sha);
          continue;
        }
        const over = bytes + body.length + (parts.length + 2) * UPLOAD_PART_OVERHEAD > MAX_UPLOAD_BYTES;
        if (parts.length && (parts.length >= MAX_UPLOAD_BODIES || over)) {
          await this.#upload(rec, parts);
          parts = [];
          bytes = 0;
        }
        parts.push({ sha256: sha, role, bytes: body });
        bytes += body.length;
      }
      if (gone.length) this.#journal.ack(rec, rec.stored, [], gone);
      if (parts.length && !this.#stopped) await this.#upload(rec, parts);
    }
  }

  /**
   * One upload of a run's bodies. Each part the server answers is final: stored or a duplicate
   * (shipped), or refused (not retained; a credential in it, which the run records as a gap).
   * A part it does not answer stays for the next shipment. Only what was answered is acknowledged
   * in the journal, so a crash before the answer sends those bodies again (duplicates to the server).
   */
  async #upload(rec: ChainRecord, parts: Part[]): Promise<void> {
    const { contentType, bytes } = encodeUpload(parts);
    const res = await this.#post(ROUTES.bodies, "POST", bytes, { "content-type": contentType, [BODY_HEADERS.run]: rec.chain });
    const text = await res.text();
    if (res.ok) {
      const answer = UploadAnswer.safeParse(safeJson(text));
      if (!answer.success) throw new Retry(`bodies of ${rec.chain}: the answer is not an UploadAnswer`, null);
      const sent = new Set(parts.map((p) => p.sha256));
      const taken = answer.data.results.filter((r) => sent.has(r.sha256));
      const refused = taken.filter((r) => r.status === "not_retained" || r.status === "body_refused");
      if (refused.length) {
        const [first] = refused;
        const more = refused.length > 1 ? ` (and ${refused.length - 1} more)` : "";
        this.lastError = `body ${first!.sha256} refused: ${first!.status} ${first!.message ?? ""}`.trim() + more;
      }
      this.#journal.ack(
        rec,
        rec.stored,
        [],
        taken.map((r) => r.sha256),
      );
      this.lastDeliveryMs = Date.now();
      return;
    }
    if (!UPLOAD_FINAL.has(res.status))
      throw new Retry(`bodies of ${rec.chain}: HTTP ${res.status} ${text.slice(0, 200)}`, this.#opts.maxMs);
    // One part refuses the whole upload: halve it until that part goes alone, the others with their half.
    if (parts.length > 1) {
      const half = Math.ceil(parts.length / 2);
      await this.#upload(rec, parts.slice(0, half));
      if (!this.#stopped) await this.#upload(rec, parts.slice(half));
      return;
    }
    // Refused alone: final (the frame names a body the server will list as missing).
    this.lastError = `body ${parts[0]!.sha256} refused: HTTP ${res.status} ${text.slice(0, 200)}`;
    this.#journal.ack(rec, rec.stored, [], [parts[0]!.sha256]);
    this.lastDeliveryMs = Date.now();
  }
}

type Part = UploadBody & { sha256: string };

/** The chains of the batch an error answer (`invalid_batch`, or `error`) names as at fault, or null when it names none of them. */
function refusedChains(answer: unknown, sent: Map<string, unknown>, error = "invalid_batch"): Set<string> | null {
  const issues = (answer as { error?: unknown; issues?: unknown } | null)?.issues;
  if ((answer as { error?: unknown } | null)?.error !== error || !Array.isArray(issues)) return null;
  const named = new Set<string>();
  for (const issue of issues) {
    const chain = (issue as { chain?: unknown } | null)?.chain;
    if (typeof chain === "string" && sent.has(chain)) named.add(chain);
  }
  return named.size > 0 ? named : null;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
