import { hostChainId } from "../../protocol/index.ts";
import type { ChainRecord } from "./journal/index.ts";
import type { HookRequest } from "./request.ts";
import type { Recorder } from "./recorder.ts";
import { parseRequest } from "./request.ts";
import { spoolWaiting, takeSpool } from "./spool.ts";

/** How many replays a spooled line gets before it is given up as a recorded gap. */
export const MAX_ATTEMPTS = 5;

export interface DrainOptions {
  /** The recorder is starting: every session that was running when it went down gets a daemon_down gap. */
  start?: boolean;
  /** When the recorder went down (its last heartbeat or stop), for that gap. */
  wentDown?: number | null;
  /** Lines spooled while the start replay ran: the same outage, so sessions it gapped get no second gap. */
  sameOutage?: boolean;
  now?: number;
}

/**
 * Replays spool/events.jsonl into the recorder for as long as it runs (at start, after it listens,
 * on a timer and before every hook), exactly once per event id. Nothing leaves the spool
 * unrecorded: a line the recorder cannot record yet goes back to the spool, and after
 * MAX_ATTEMPTS it is recorded as a gap. See docs/collector.md, "The spool".
 */
export class SpoolReplayer {
  readonly #recorder: Recorder;
  readonly #dir: string;
  readonly #log: (msg: string) => void;
  #draining = false;
  /** The chains the start replay gave a daemon_down gap. */
  #startGapped = new Set<string>();

  constructor(recorder: Recorder, dir: string, log: (msg: string) => void) {
    this.#recorder = recorder;
    this.#dir = dir;
    this.#log = log;
  }

  /** Replays whatever waits in the spool; a no-op while a replay runs (a hook replayed calls back here). */
  drain(opts: DrainOptions = {}): void {
    if (this.#draining || (!opts.start && !spoolWaiting(this.#dir))) return;
    this.#draining = true;
    try {
      this.#drain(opts);
    } catch (err) {
      // The spool stays where it is for the next attempt; the hook being answered must not fail for it.
      this.#log(`spool replay failed: ${(err as Error).message}`);
    } finally {
      this.#draining = false;
    }
  }

  #drain(opts: DrainOptions): void {
    const rec = this.#recorder;
    const now = opts.now ?? Date.now();
    const spool = takeSpool(this.#dir);
    const lines = spool.lines.flatMap((l) => (l.value ? [{ value: l.value, req: parseRequest(l.value) }] : []));
    const firstSpooled = lines.reduce<number | null>((m, { req }) => {
      const t = req?.spooled_ms;
      return t !== undefined && (m === null || t < m) ? t : m;
    }, null);
    // Since when the recorder was out of reach: at start, since it went down; later, since the
    // session's first spooled step.
    const since = (req: HookRequest | null) =>
      Math.min(opts.start ? (opts.wentDown ?? firstSpooled ?? now) : (req?.spooled_ms ?? now), now);
    const gapped = opts.sameOutage ? new Set(this.#startGapped) : new Set<string>();
    const gap = (chain: ChainRecord | null | undefined, from: number) => {
      if (!chain || gapped.has(chain.chain) || chain.writer.state.final) return;
      gapped.add(chain.chain);
      rec.append(chain, "telemetry_gap", { path: "recorder", cause: "daemon_down", from_ms: from, to_ms: now }, from);
    };
    const running = opts.start ? rec.running() : [];
    const keep: Record<string, unknown>[] = [];
    let replayed = 0;
    for (const { value, req } of lines) {
      if (!req) continue;
      try {
        if (req.id !== null && rec.journal.has(req.id)) {
          // The recorder recorded this event itself, but the hook had given up on it and the agent
          // acted on the answer it spooled: the record must say so.
          if (rec.recordOfflineAnswer(req)) replayed++;
          continue;
        }
        this.#replay(req, (chain) => gap(chain, since(req)));
        replayed++;
      } catch (err) {
        const attempts = (typeof value.attempts === "number" ? value.attempts : 0) + 1;
        const why = (err as Error).message;
        if (attempts < MAX_ATTEMPTS) keep.push({ ...value, attempts });
        else this.#giveUp(req, why, now);
        this.#log(`spooled event ${req.id ?? "?"} not recorded (attempt ${attempts}): ${why}`);
      }
    }
    for (const r of running) gap(r, since(null));
    if (spool.dropped > 0) {
      const chains = [...gapped].map((c) => rec.journal.chains.get(c)).filter((r): r is ChainRecord => !!r && !r.writer.state.final);
      const targets = chains.length ? chains : [rec.journal.open(hostChainId(rec.host.host_id), null)];
      for (const target of targets)
        rec.append(
          target,
          "telemetry_gap",
          { path: "recorder", cause: "spool_overflow", dropped: spool.dropped, from_ms: since(null), to_ms: now },
          now,
        );
    }
    if (opts.start) this.#startGapped = gapped;
    spool.done(keep);
    if (replayed || spool.dropped || keep.length)
      this.#log(`replayed ${replayed} spooled events (${spool.dropped} dropped, ${keep.length} kept for another attempt)`);
  }

  /**
   * One spooled event: the session's daemon_down gap goes before its first replayed step (after
   * it when that step starts the session), then the step.
   */
  #replay(req: HookRequest, gap: (chain: ChainRecord | null | undefined) => void): void {
    const rec = this.#recorder;
    const s = rec.currentRunOf(req);
    if (!s) {
      rec.handle(req);
      return;
    }
    const existed = rec.journal.chains.get(s.chain);
    if (existed || req.event.hook_event_name !== "SessionStart") gap(existed ?? rec.chainOf(req));
    rec.handle(req);
    gap(rec.journal.chains.get(s.chain));
  }

  /** A line that failed MAX_ATTEMPTS times: a gap on its session's chain (or the computer's own) says what was lost. */
  #giveUp(req: HookRequest | null, why: string, now: number): void {
    const rec = this.#recorder;
    let chain: ChainRecord | null = null;
    try {
      chain = req ? rec.chainOf(req) : null;
    } catch {}
    if (!chain || chain.writer.state.final) chain = rec.journal.open(hostChainId(rec.host.host_id), null);
    const event = String(req?.event.hook_event_name ?? "unknown").slice(0, 64);
    const detail = `a spooled ${event} event could not be recorded after ${MAX_ATTEMPTS} attempts: ${why}`.slice(0, 1024);
    rec.append(chain, "telemetry_gap", { path: "recorder", cause: "other", detail, from_ms: req?.t ?? now, to_ms: now }, now);
  }
}
