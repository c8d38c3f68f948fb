import type { Payload } from "../../../protocol/index.ts";
import { claudeUsage } from "../../recorder/sources/claude.ts";
import { count, obj, parseObject, str } from "../../lib/json.ts";
import type { SseEvent } from "./sse.ts";

type Usage = Payload<"llm_call">["usage"];

/** What a response said about itself, read as it passed. */
export interface Seen {
  /** Anthropic message id, OpenAI response or completion id. */
  id?: string;
  model?: string;
  usage: Usage | null;
}

/** Reads a vendor response's id, model and usage: each SSE event of a stream, or a whole JSON body. */
export interface Meter {
  event(e: SseEvent): void;
  json(body: Record<string, unknown>): void;
  seen(): Seen;
}

/**
 * Anthropic Messages. `message_start` carries the input and cache counts; each `message_delta`
 * carries cumulative counts (output always, input and cache sometimes): the latest value of each
 * field is kept, never a sum (Anthropic's streaming docs: "the token counts shown in the usage field
 * of the message_delta event are cumulative").
 */
export class AnthropicMeter implements Meter {
  #id?: string;
  #model?: string;
  readonly #usage: Record<string, unknown> = {};
  #any = false;

  #take(u: unknown): void {
    const o = obj(u);
    if (!o) return;
    this.#any = true;
    for (const [k, v] of Object.entries(o)) if (v !== null && v !== undefined) this.#usage[k] = v;
  }

  event(e: SseEvent): void {
    if (e.event !== "message_start" && e.event !== "message_delta") return;
    const o = parseObject(e.data);
    if (!o) return;
    if (o.type === "message_start") {
      const m = obj(o.message);
      this.#id = str(m?.id) ?? this.#id;
      this.#model = str(m?.model) ?? this.#model;
      this.#take(m?.usage);
    } else if (o.type === "message_delta") this.#take(o.usage);
  }

  json(body: Record<string, unknown>): void {
    this.#id = str(body.id);
    this.#model = str(body.model);
    this.#take(body.usage);
  }

  seen(): Seen {
    return { id: this.#id, model: this.#model, usage: this.#any ? claudeUsage(this.#usage) : null };
  }
}

/** An OpenAI usage object (Responses or Chat Completions names) in the frame's terms: input excludes cached tokens. */
export function openaiUsage(u: Record<string, unknown>): Usage {
  const input = count(u.input_tokens ?? u.prompt_tokens);
  const cached = count(obj(u.input_tokens_details ?? u.prompt_tokens_details)?.cached_tokens);
  const reasoning = count(obj(u.output_tokens_details ?? u.completion_tokens_details)?.reasoning_tokens);
  const usage: Usage = {
    input_tokens: Math.max(0, input - cached),
    output_tokens: count(u.output_tokens ?? u.completion_tokens),
    cache_read_tokens: cached,
  };
  if (reasoning) usage.reasoning_tokens = reasoning;
  return usage;
}

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);

/** OpenAI Responses: the usage is on the terminal event (`response.completed`, `.incomplete` or `.failed`); there is no `[DONE]`. */
export class ResponsesMeter implements Meter {
  #id?: string;
  #model?: string;
  #usage: Usage | null = null;

  #response(r: Record<string, unknown> | null): void {
    if (!r) return;
    this.#id = str(r.id) ?? this.#id;
    this.#model = str(r.model) ?? this.#model;
    const u = obj(r.usage);
    if (u) this.#usage = openaiUsage(u);
  }

  event(e: SseEvent): void {
    const type = e.event ?? "";
    if (type !== "response.created" && !TERMINAL.has(type)) return;
    const o = parseObject(e.data);
    if (o) this.#response(obj(o.response));
  }

  json(body: Record<string, unknown>): void {
    this.#response(body);
  }

  seen(): Seen {
    return { id: this.#id, model: this.#model, usage: this.#usage };
  }
}

/** Whether a Chat Completions chunk is the usage chunk the gateway asked for: usage set and no choices. */
export function usageOnlyChunk(o: Record<string, unknown>): boolean {
  return obj(o.usage) !== null && Array.isArray(o.choices) && o.choices.length === 0;
}

/**
 * OpenAI Chat Completions: with `stream_options.include_usage`, a chunk before `[DONE]` carries the
 * usage (usually with no choices; some compatible servers put it on the last chunk with choices).
 */
export class ChatMeter implements Meter {
  #id?: string;
  #model?: string;
  #usage: Usage | null = null;

  event(e: SseEvent): void {
    if (e.data === "[DONE]") return;
    const o = parseObject(e.data);
    if (o) this.json(o);
  }

  json(body: Record<string, unknown>): void {
    this.#id = str(body.id) ?? this.#id;
    this.#model = str(body.model) ?? this.#model;
    const u = obj(body.usage);
    if (u) this.#usage = openaiUsage(u);
  }

  seen(): Seen {
    return { id: this.#id, model: this.#model, usage: this.#usage };
  }
}
