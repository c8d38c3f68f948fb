import type { Payload } from "../../../protocol/index.ts";
import { count, obj, parseObject, str, timeOf } from "./lines.ts";

type Usage = Payload<"llm_call">["usage"];

/** One API response as the transcript shows it (the largest record seen for its key). */
interface Response {
  key: string;
  message_id: string;
  request_id?: string;
  model: string;
  usage: Usage;
  t: number;
  sidechain: boolean;
  speed: boolean;
}

/** What survives a restart: responses not yet final, the keys already emitted, each stream's open key. */
export interface ClaudeState {
  pending: Response[];
  emitted: string[];
  streams: Record<string, string>;
}

/** An llm_call ready to record, with the de-duplication key it was recorded under. */
export interface UsageCall {
  key: string;
  t: number;
  payload: Payload<"llm_call">;
}

const MAX_EMITTED = 50_000;

function total(u: Usage): number {
  return u.input_tokens + u.output_tokens + (u.cache_read_tokens ?? 0) + (u.cache_write_tokens ?? 0);
}

/** The usage of one transcript record, mapped to the llm_call fields (harnesses.md §1.7). */
export function claudeUsage(u: Record<string, unknown>): Usage {
  const cc = obj(u.cache_creation);
  const split = cc && (typeof cc.ephemeral_5m_input_tokens === "number" || typeof cc.ephemeral_1h_input_tokens === "number");
  const usage: Usage = {
    input_tokens: count(u.input_tokens),
    output_tokens: count(u.output_tokens),
    cache_read_tokens: count(u.cache_read_input_tokens),
    cache_write_tokens: split
      ? count(cc.ephemeral_5m_input_tokens) + count(cc.ephemeral_1h_input_tokens)
      : count(u.cache_creation_input_tokens),
  };
  // The transcript's usage has no separate thinking count; a build that adds one is passed on as a number only.
  if (typeof u.thinking_tokens === "number") usage.thinking_tokens = count(u.thinking_tokens);
  return usage;
}

/** The usage-bearing record of a line (assistant line or subagent progress line) and the stream it belongs to. */
function recordOf(o: Record<string, unknown>, now: number): { rec: Response | null; stream: string | null } {
  let message: Record<string, unknown> | null = null;
  let requestId: unknown;
  let stream: string;
  let sidechain = o.isSidechain === true;
  if (o.type === "assistant") {
    message = obj(o.message);
    requestId = o.requestId;
    stream = sidechain ? `side:${String(o.agentId ?? "")}` : "main";
  } else if (o.type === "progress") {
    const data = obj(o.data);
    const outer = obj(data?.message);
    message = obj(outer?.message);
    requestId = outer?.requestId;
    stream = `progress:${String(o.parentToolUseID ?? data?.agentId ?? "")}`;
    sidechain = true;
  } else if (o.type === "user") {
    // A user line (a prompt or a tool result) means the stream's last response has finished.
    return { rec: null, stream: sidechain ? `side:${String(o.agentId ?? "")}` : "main" };
  } else return { rec: null, stream: null };
  const usage = obj(message?.usage);
  const id = str(message?.id);
  const model = str(message?.model);
  if (!message || !usage || !id || !model || model === "<synthetic>") return { rec: null, stream };
  const req = str(requestId);
  return {
    rec: {
      key: req ? `${id}\u0000${req}` : id,
      message_id: id,
      ...(req ? { request_id: req } : {}),
      model,
      usage: claudeUsage(usage),
      t: timeOf(o, now),
      sidechain,
      speed: typeof usage.speed === "string",
    },
    stream,
  };
}

/** ccusage's rule: the larger total wins; on a tie, a record with `speed`, then a non-sidechain one. */
function better(candidate: Response, kept: Response): boolean {
  const a = total(candidate.usage);
  const b = total(kept.usage);
  if (a !== b) return a > b;
  if (candidate.speed !== kept.speed) return candidate.speed;
  return kept.sidechain && !candidate.sidechain;
}

/**
 * Claude Code transcript → llm_call, one per API response. Pure: lines in, calls out.
 *
 * A response's lines (one per content block) repeat its usage, and output grows from a placeholder,
 * so a response is recorded only once it is final: when its stream (the main conversation, a
 * sidechain, or one subagent's progress lines) moves on to another response or to a user line, or
 * when the caller flushes (Stop, SubagentStop, SessionEnd, or the file has been quiet). A record
 * that arrives for a key already recorded is not counted again.
 */
export class ClaudeTranscript {
  readonly #pending = new Map<string, Response>();
  readonly #emitted: Set<string>;
  readonly #streams: Map<string, string>;
  /** message id → the key it was first seen under with a requestId. */
  readonly #byMessage = new Map<string, string>();
  /** Lines that were not JSON; the caller reports them. */
  bad = 0;

  constructor(state?: ClaudeState) {
    for (const r of state?.pending ?? []) this.#pending.set(r.key, r);
    this.#emitted = new Set(state?.emitted ?? []);
    this.#streams = new Map(Object.entries(state?.streams ?? {}));
    for (const k of [...this.#emitted, ...this.#pending.keys()]) this.#index(k);
  }

  get state(): ClaudeState {
    return {
      pending: [...this.#pending.values()],
      emitted: [...this.#emitted].slice(-MAX_EMITTED),
      streams: Object.fromEntries(this.#streams),
    };
  }

  /** Feeds one line; returns the responses this line made final. */
  line(text: string, now = Date.now()): UsageCall[] {
    const o = parseObject(text);
    if (!o) {
      this.bad++;
      return [];
    }
    const { rec, stream } = recordOf(o, now);
    const out: UsageCall[] = [];
    if (stream !== null) {
      const open = this.#streams.get(stream);
      const key = rec ? this.#keyOf(rec) : null;
      if (open !== undefined && open !== key) {
        this.#finish(open, out);
        this.#streams.delete(stream);
      }
      if (key !== null) this.#streams.set(stream, key);
    }
    if (rec) {
      rec.key = this.#keyOf(rec);
      if (!this.#emitted.has(rec.key)) {
        const kept = this.#pending.get(rec.key);
        if (!kept || better(rec, kept)) this.#pending.set(rec.key, kept ? { ...rec, t: kept.t } : rec);
      }
    }
    return out;
  }

  /** Makes every pending response final. */
  flush(): UsageCall[] {
    const out: UsageCall[] = [];
    for (const key of [...this.#pending.keys()]) this.#finish(key, out);
    this.#streams.clear();
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

  #finish(key: string, out: UsageCall[]): void {
    const r = this.#pending.get(key);
    if (!r) return;
    this.#pending.delete(key);
    this.#emitted.add(key);
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
