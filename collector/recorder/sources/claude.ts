import type { Payload } from "../../../protocol/index.ts";
import { count, obj, parseObject, str } from "../../lib/json.ts";
import { timeOf } from "./lines.ts";

type Usage = Payload<"llm_call">["usage"];

/** One API response as the transcript shows it (the latest line seen for its key). */
interface Response {
  key: string;
  message_id: string;
  request_id?: string;
  model: string;
  usage: Usage;
  t: number;
  /** A line of it carried the vendor's stop_reason: its usage is the final one. */
  complete?: boolean;
}

/** What survives a restart: responses not yet final, the keys already emitted, each stream's open key, the usages recorded per message. */
export interface ClaudeState {
  pending: Response[];
  emitted: string[];
  streams: Record<string, string>;
  /** Per message key (id and request id), the model and usage of each response recorded under it. */
  sigs?: Record<string, string[]>;
}

/** An llm_call ready to record, with the de-duplication key it was recorded under. */
export interface UsageCall {
  key: string;
  t: number;
  payload: Payload<"llm_call">;
}

const MAX_EMITTED = 50_000;
/** Separates a message key from the number of a later response that reused it. */
const AGAIN = "\u0001";

const baseOf = (key: string) => key.split(AGAIN, 1)[0]!;
/** The model and billed usage of a response: two responses of one message key are one call only when these are equal too. */
const sigOf = (r: Response) =>
  JSON.stringify([r.model, r.usage.input_tokens, r.usage.output_tokens, r.usage.cache_read_tokens ?? 0, r.usage.cache_write_tokens ?? 0]);

/**
 * The usage of one transcript record (the Messages API usage object Claude Code writes), mapped to the llm_call fields. Cache
 * writes are `cache_creation_input_tokens`, the figure the vendor bills; the 5m/1h split is only
 * a fallback when that total is absent (Claude Code writes the split as zeros when the vendor
 * sends none, so taking the split would drop every cache write).
 */
export function claudeUsage(u: Record<string, unknown>): Usage {
  const cc = obj(u.cache_creation);
  const usage: Usage = {
    input_tokens: count(u.input_tokens),
    output_tokens: count(u.output_tokens),
    cache_read_tokens: count(u.cache_read_input_tokens),
    cache_write_tokens:
      typeof u.cache_creation_input_tokens === "number" || !cc
        ? count(u.cache_creation_input_tokens)
        : count(cc.ephemeral_5m_input_tokens) + count(cc.ephemeral_1h_input_tokens),
  };
  // Thinking is recorded as a count only: 2.1 writes it in output_tokens_details (part of the output).
  const thinking = u.thinking_tokens ?? obj(u.output_tokens_details)?.thinking_tokens;
  if (typeof thinking === "number") usage.thinking_tokens = count(thinking);
  return usage;
}

/** The usage-bearing record of a line (assistant line or subagent progress line) and the stream it belongs to. */
function recordOf(o: Record<string, unknown>, now: number): { rec: Response; stream: string } | null {
  let message: Record<string, unknown> | null = null;
  let requestId: unknown;
  let stream: string;
  if (o.type === "assistant") {
    message = obj(o.message);
    requestId = o.requestId;
    stream = o.isSidechain === true ? `side:${String(o.agentId ?? "")}` : "main";
  } else if (o.type === "progress") {
    const data = obj(o.data);
    const outer = obj(data?.message);
    message = obj(outer?.message);
    requestId = outer?.requestId;
    stream = `progress:${String(o.parentToolUseID ?? data?.agentId ?? "")}`;
  } else return null;
  const usage = obj(message?.usage);
  const id = str(message?.id);
  const model = str(message?.model);
  if (!message || !usage || !id || !model || model === "<synthetic>") return null;
  const req = str(requestId);
  return {
    rec: {
      key: req ? `${id}\u0000${req}` : id,
      message_id: id,
      ...(req ? { request_id: req } : {}),
      model,
      usage: claudeUsage(usage),
      t: timeOf(o, now),
      ...(typeof message.stop_reason === "string" ? { complete: true } : {}),
    },
    stream,
  };
}

/**
 * Whether a later line of a response replaces the one kept: a line carrying the final usage is
 * never replaced by one that does not; otherwise the latest line wins. Not the largest total: a
 * placeholder line can carry a larger total than the final one (Claude Code writes the cache
 * fields differently on the two), and keeping it loses the response's real output count.
 */
function replaces(candidate: Response, kept: Response): boolean {
  return !!candidate.complete || !kept.complete;
}

/**
 * Claude Code transcript → llm_call, one per API response. Pure: lines in, calls out.
 *
 * A response's lines (one per content block) repeat its usage, and output grows from a placeholder
 * to the final count, which comes with the vendor's stop_reason. Other lines may sit between them:
 * Claude Code 2.1 writes a tool's result as soon as the tool ran, while the response that asked for
 * it is still streaming. So a response is recorded only once it is over: when its stream (the main
 * conversation, a sidechain, or one subagent's progress lines) starts another response, when the
 * caller flushes (Stop, SubagentStop, SessionEnd, the session ending), or, for a response whose
 * final line has arrived, when the file has been quiet. Until then its latest line is kept,
 * whatever lines come between. A vendor may reuse a message id (a local server, a replay): for a
message with no request id (the vendor sent none), a line whose response already ended (recorded,
or its final line kept) with another usage starts a new response under the same id; one whose
final model and usage equal a response already recorded under its id is the same call, not
counted again. A request id names one exchange: its lines are one response.
 */
export class ClaudeTranscript {
  readonly #pending = new Map<string, Response>();
  readonly #emitted: Set<string>;
  readonly #streams: Map<string, string>;
  /** message id → the key it was first seen under with a requestId. */
  readonly #byMessage = new Map<string, string>();
  /** message key → the key of its latest response (the key itself, or the key and a number when reused). */
  readonly #latest = new Map<string, string>();
  readonly #sigs: Map<string, string[]>;
  /** Lines that were not JSON; the caller reports them. */
  bad = 0;

  constructor(state?: ClaudeState) {
    for (const r of state?.pending ?? []) this.#pending.set(r.key, r);
    this.#emitted = new Set(state?.emitted ?? []);
    this.#streams = new Map(Object.entries(state?.streams ?? {}));
    this.#sigs = new Map(Object.entries(state?.sigs ?? {}));
    for (const k of [...this.#emitted, ...this.#pending.keys()]) {
      this.#index(baseOf(k));
      this.#latest.set(baseOf(k), k);
    }
  }

  get state(): ClaudeState {
    return {
      pending: [...this.#pending.values()],
      emitted: [...this.#emitted].slice(-MAX_EMITTED),
      streams: Object.fromEntries(this.#streams),
      sigs: Object.fromEntries([...this.#sigs].slice(-MAX_EMITTED)),
    };
  }

  /** Feeds one line; returns the responses this line made final. */
  line(text: string, now = Date.now()): UsageCall[] {
    const o = parseObject(text);
    if (!o) {
      this.bad++;
      return [];
    }
    const found = recordOf(o, now);
    if (!found) return [];
    const { rec, stream } = found;
    const out: UsageCall[] = [];
    const base = this.#keyOf(rec);
    const latest = this.#latest.get(base) ?? base;
    const last = this.#pending.get(latest);
    // A request id names one exchange: only a key without one can be another response's.
    const reusable = !base.includes("\u0000");
    if (last) rec.key = reusable && last.complete && sigOf(rec) !== sigOf(last) ? this.#again(base, latest) : latest;
    else rec.key = reusable && this.#emitted.has(latest) ? this.#again(base, latest) : latest;
    this.#latest.set(base, rec.key);
    // Only the next response of the same stream ends the open one; other lines (a tool's result,
    // written while the response that asked for it is still streaming) do not.
    const open = this.#streams.get(stream);
    if (open !== undefined && open !== rec.key) this.#finish(open, out);
    this.#streams.set(stream, rec.key);
    if (this.#emitted.has(rec.key)) return out;
    const kept = this.#pending.get(rec.key);
    if (!kept) this.#pending.set(rec.key, rec);
    else if (replaces(rec, kept)) this.#pending.set(rec.key, { ...rec, t: kept.t });
    return out;
  }

  /**
   * Makes pending responses final: every one (the turn or the session is over), or with
   * `completeOnly` (the file went quiet) only those whose final line has arrived; a response still
   * streaming stays open, so its later lines still count.
   */
  flush(completeOnly = false): UsageCall[] {
    const out: UsageCall[] = [];
    for (const [key, r] of [...this.#pending]) if (!completeOnly || r.complete) this.#finish(key, out);
    for (const [stream, key] of [...this.#streams]) if (!this.#pending.has(key)) this.#streams.delete(stream);
    return out;
  }

  /** A record without requestId joins the response already seen with the same message id. */
  #keyOf(rec: Response): string {
    if (rec.request_id) {
      this.#index(rec.key);
      return rec.key;
    }
    return this.#byMessage.get(rec.message_id) ?? rec.key;
  }

  #index(key: string): void {
    const cut = key.indexOf("\u0000");
    if (cut > 0 && !this.#byMessage.has(key.slice(0, cut))) this.#byMessage.set(key.slice(0, cut), key);
  }

  /** The key of another response under a message key already used. */
  #again(base: string, latest: string): string {
    const n = latest === base ? 1 : Number(latest.slice(latest.indexOf(AGAIN) + 1));
    return `${base}${AGAIN}${n + 1}`;
  }

  #finish(key: string, out: UsageCall[]): void {
    const r = this.#pending.get(key);
    if (!r) return;
    this.#pending.delete(key);
    this.#emitted.add(key);
    const base = baseOf(key);
    const sig = sigOf(r);
    const sigs = this.#sigs.get(base);
    // The same call again (a line repeated, a file read again): its model and usage were recorded under its key.
    // A key recorded by a parser older than the usages kept per key: as it did, not counted again.
    if (key !== base && (sigs ? sigs.includes(sig) : this.#emitted.has(base))) return;
    this.#sigs.delete(base);
    this.#sigs.set(base, [...(sigs ?? []), sig].slice(-64));
    out.push({
      key,
      t: r.t,
      payload: {
        path: "transcript",
        vendor: "anthropic",
        model: r.model,
        forwarded: true,
        usage: r.usage,
        message_id: r.message_id,
        ...(r.request_id ? { request_id: r.request_id } : {}),
      },
    });
  }
}
