import type { Payload } from "../../../protocol/index.ts";
import { count, obj, parseObject, str } from "../../lib/json.ts";
import { timeOf } from "./lines.ts";

type Usage = Payload<"llm_call">["usage"];

/** Codex's token usage shape (total_token_usage / last_token_usage). */
interface Tokens {
  input_tokens: number;
  cached_input_tokens: number;
  cache_write_input_tokens: number;
  output_tokens: number;
  reasoning_output_tokens: number;
}

const FIELDS: (keyof Tokens)[] = [
  "input_tokens",
  "cached_input_tokens",
  "cache_write_input_tokens",
  "output_tokens",
  "reasoning_output_tokens",
];

/** A function call seen in the rollout, waiting for its output (paired by call_id). */
interface OpenCall {
  name: string;
  input: string;
  t: number;
}

/** What survives a restart. */
export interface CodexState {
  model: string | null;
  lastInfo: string | null;
  prev: Tokens | null;
  bytes: number;
  metas: number;
  subagent: boolean;
  replaySecond: string | null;
  replayOver: boolean;
  calls: Record<string, OpenCall>;
  /** The thread a forked or subagent rollout was spawned from (its replay is that thread's history). */
  parent?: string | null;
  /** The vendor's response id of the latest token_usage_record and the totals it reached (the next token_count's). */
  response?: { totals: string; id: string } | null;
}

/** An llm_call from a token_count event; `identity` is its cumulative totals (cross-file replay protection). */
export interface CodexUsage {
  identity: string;
  t: number;
  payload: Payload<"llm_call">;
}

/** A tool call paired from function_call + function_call_output. */
export interface CodexTool {
  call_id: string;
  name: string;
  input: unknown;
  output: string;
  exit_code?: number;
  duration_ms?: number;
  t: number;
}

export type CodexOut = { usage: CodexUsage } | { tool: CodexTool };

function tokens(v: unknown): Tokens | null {
  const o = obj(v);
  if (!o) return null;
  return Object.fromEntries(FIELDS.map((f) => [f, count(o[f])])) as unknown as Tokens;
}

function advanced(cur: Tokens, prev: Tokens): "same" | "forward" | "regressed" {
  if (FIELDS.some((f) => cur[f] < prev[f])) return "regressed";
  return FIELDS.some((f) => cur[f] > prev[f]) ? "forward" : "same";
}

/** Uncached input as input_tokens, cached as cache_read (ccusage's convention, comparable to Anthropic's). */
function usageOf(d: Tokens): Usage {
  const u: Usage = {
    input_tokens: Math.max(0, d.input_tokens - d.cached_input_tokens),
    output_tokens: d.output_tokens,
    cache_read_tokens: d.cached_input_tokens,
  };
  if (d.cache_write_input_tokens) u.cache_write_tokens = d.cache_write_input_tokens;
  if (d.reasoning_output_tokens) u.reasoning_tokens = d.reasoning_output_tokens;
  return u;
}

function jsonOrString(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The exit code and duration an older Codex wraps around a shell call's output. */
function outputMeta(output: string): { exit_code?: number; duration_ms?: number } {
  const meta = obj(obj(jsonOrString(output))?.metadata);
  const out: { exit_code?: number; duration_ms?: number } = {};
  if (typeof meta?.exit_code === "number" && Number.isInteger(meta.exit_code)) out.exit_code = meta.exit_code;
  if (typeof meta?.duration_seconds === "number" && meta.duration_seconds >= 0) out.duration_ms = Math.round(meta.duration_seconds * 1000);
  const m = /^Exit code: (-?\d+)/m.exec(output);
  if (out.exit_code === undefined && m) out.exit_code = Number(m[1]);
  return out;
}

/**
 * Codex rollout → llm_call per model response and tool calls paired by call_id. Pure.
 *
 * Codex's `token_count` events (codex-rs `TokenCountEvent`) are read down a ladder: one whose `info` equals the previous one is a
 * re-emission (rate_limits may differ); with cumulative totals, an event whose totals have not
 * advanced is dropped and the usage is the delta of the totals (a regression starts a new baseline);
 * in a forked or subagent rollout (`thread_spawn` in the first 16 KB, or a second session_meta),
 * the leading burst of token_counts sharing one second is the parent's history: it sets the baseline
 * and is not recorded. `identity` (the cumulative totals) and `parent` let the caller drop totals
 * the parent thread's file already recorded, should its replay outlast that second.
 */
export class CodexRollout {
  #s: CodexState;
  bad = 0;

  constructor(state?: CodexState) {
    this.#s = state
      ? structuredClone(state)
      : { model: null, lastInfo: null, prev: null, bytes: 0, metas: 0, subagent: false, replaySecond: null, replayOver: false, calls: {} };
  }

  get state(): CodexState {
    return structuredClone(this.#s);
  }

  /** The parent thread's id, for a forked or subagent rollout. */
  get parent(): string | null {
    return this.#s.parent ?? null;
  }

  line(text: string, now = Date.now()): CodexOut[] {
    const s = this.#s;
    if (s.bytes < 16_384 && text.includes("thread_spawn")) s.subagent = true;
    s.bytes += text.length + 1;
    const o = parseObject(text);
    if (!o) {
      this.bad++;
      return [];
    }
    const p = obj(o.payload);
    if (!p) return [];
    const t = timeOf(o, now);
    if (o.type === "session_meta") {
      // The first session_meta is this thread's; a second one, or thread_spawn, names its parent.
      const spawn = obj(obj(obj(p.source)?.subagent)?.thread_spawn);
      s.parent ??= str(spawn?.parent_thread_id) ?? (s.metas > 0 ? (str(p.id) ?? null) : null);
      s.metas++;
      return [];
    }
    if (o.type === "turn_context") {
      s.model = str(p.model) ?? s.model;
      return [];
    }
    if (o.type === "token_usage_record") {
      // Codex 0.169 writes the response's id beside the totals its token_count repeats next.
      const totals = tokens(p.thread_token_usage);
      const id = str(p.response_id);
      s.response = totals && id ? { totals: JSON.stringify(FIELDS.map((f) => totals[f])), id } : null;
      return [];
    }
    if (o.type === "event_msg" && p.type === "token_count") return this.#tokenCount(o, p, t);
    if (o.type === "response_item") return this.#item(p, t);
    return [];
  }

  #tokenCount(o: Record<string, unknown>, p: Record<string, unknown>, t: number): CodexOut[] {
    const s = this.#s;
    const info = obj(p.info);
    if (!info) return [];
    const infoKey = JSON.stringify(info);
    const second = typeof o.timestamp === "string" ? o.timestamp.slice(0, 19) : null;
    let replay = false;
    if (!s.replayOver && (s.subagent || s.metas > 1)) {
      s.replaySecond ??= second;
      if (second !== null && second === s.replaySecond) replay = true;
      else s.replayOver = true;
    } else s.replayOver = true;
    if (infoKey === s.lastInfo) return [];
    s.lastInfo = infoKey;
    const total = tokens(info.total_token_usage);
    const last = tokens(info.last_token_usage);
    let delta: Tokens | null = null;
    if (total) {
      const step = s.prev ? advanced(total, s.prev) : "forward";
      if (step === "same") return [];
      delta =
        step === "regressed" || !s.prev ? total : (Object.fromEntries(FIELDS.map((f) => [f, total[f] - s.prev![f]])) as unknown as Tokens);
      s.prev = total;
    } else delta = last;
    if (replay || !delta || FIELDS.every((f) => delta[f] === 0)) return [];
    const model = s.model ?? str(info.model) ?? "unknown";
    const identity = total ? JSON.stringify(FIELDS.map((f) => total[f])) : `${infoKey}@${t}`;
    const responseId = s.response?.totals === identity ? s.response.id : undefined;
    return [
      {
        usage: {
          identity,
          t,
          payload: {
            path: "transcript",
            vendor: "openai",
            model,
            forwarded: true,
            usage: usageOf(delta),
            ...(responseId ? { message_id: responseId } : {}),
          },
        },
      },
    ];
  }

  #item(p: Record<string, unknown>, t: number): CodexOut[] {
    const s = this.#s;
    const id = str(p.call_id);
    if (!id) return [];
    if (p.type === "function_call" || p.type === "custom_tool_call" || p.type === "local_shell_call") {
      const input = p.type === "function_call" ? p.arguments : p.type === "custom_tool_call" ? p.input : p.action;
      s.calls[id] = {
        name: str(p.name) ?? (p.type === "local_shell_call" ? "local_shell" : "unknown"),
        input: typeof input === "string" ? input : JSON.stringify(input ?? null),
        t,
      };
      return [];
    }
    if (p.type !== "function_call_output" && p.type !== "custom_tool_call_output") return [];
    const call = s.calls[id];
    if (!call) return [];
    delete s.calls[id];
    const output = typeof p.output === "string" ? p.output : JSON.stringify(p.output ?? null);
    return [{ tool: { call_id: id, name: call.name, input: jsonOrString(call.input), output, ...outputMeta(output), t: call.t } }];
  }
}
