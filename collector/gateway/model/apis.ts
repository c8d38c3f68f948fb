import type { IncomingHttpHeaders } from "node:http";
import { obj, parseObject, str } from "../../lib/json.ts";
import { AnthropicMeter, ChatMeter, type Meter, ResponsesMeter } from "./usage.ts";

export type Vendor = "anthropic" | "openai";

/** A model API the gateway meters: its vendor and how its responses carry usage. */
export interface Api {
  vendor: Vendor;
  name: "messages" | "count_tokens" | "responses" | "chat";
  /** False for an API the vendor does not bill (count_tokens): forwarded and checked, no llm_call. */
  metered: boolean;
  meter(): Meter;
}

const APIS: Record<string, Api> = {
  "/v1/messages": { vendor: "anthropic", name: "messages", metered: true, meter: () => new AnthropicMeter() },
  "/v1/messages/count_tokens": { vendor: "anthropic", name: "count_tokens", metered: false, meter: () => new AnthropicMeter() },
  "/v1/responses": { vendor: "openai", name: "responses", metered: true, meter: () => new ResponsesMeter() },
  "/v1/chat/completions": { vendor: "openai", name: "chat", metered: true, meter: () => new ChatMeter() },
};

/**
 * What the gateway does with a request (docs/collector.md, "The gateway"): a POST to a model API
 * it meters is checked, forwarded and recorded; any other POST (or PUT, PATCH, DELETE) is refused,
 * because it may be a model call the gateway cannot meter (legacy completions, batches, embeddings)
 * and forwarding it would pass the allow-list and the record by; a GET or HEAD (model lists) is
 * forwarded unmetered and only counted in `tacho status`.
 */
export function routeOf(method: string, pathname: string): { api: Api } | "unmetered" | "refused" {
  const api = method === "POST" ? APIS[pathname.replace(/\/+$/, "")] : undefined;
  if (api) return { api };
  return method === "GET" || method === "HEAD" ? "unmetered" : "refused";
}

/** The vendor a path belongs to, for an answer in its shape (a refused unknown path). */
export function vendorOfPath(pathname: string, headers: IncomingHttpHeaders): Vendor {
  if (pathname.startsWith("/v1/messages") || headers["anthropic-version"] !== undefined || headers["x-api-key"] !== undefined)
    return "anthropic";
  return "openai";
}

/** The parts of a model request the gateway reads: the model, whether it streams, and the bytes to forward. */
export interface ModelRequest {
  model: string;
  stream: boolean;
  /** The bytes sent upstream: the client's, or with `stream_options.include_usage` added (then `injected`). */
  bytes: Buffer;
  injected: boolean;
  /** The output cap the request sets (`max_tokens`, `max_output_tokens`, `max_completion_tokens`); null when it sets none. */
  maxOutputTokens: number | null;
}

function outputCap(o: Record<string, unknown> | null): number | null {
  for (const k of ["max_tokens", "max_output_tokens", "max_completion_tokens"]) {
    const v = o?.[k];
    if (typeof v === "number" && Number.isSafeInteger(v) && v > 0) return v;
  }
  return null;
}

/** Reads a model request's body; an unreadable body is forwarded as it is, its model `unknown`. */
export function readModelRequest(api: Api, body: Buffer): ModelRequest {
  const o = body.length > 0 ? parseObject(body.toString("utf8")) : null;
  const model = str(o?.model) ?? "unknown";
  const stream = o?.stream === true;
  if (o && api.name === "chat" && stream && obj(o.stream_options)?.include_usage !== true) {
    // Without it a Chat Completions stream carries no usage; its chunk is taken out again on the way back.
    const bytes = Buffer.from(JSON.stringify({ ...o, stream_options: { ...obj(o.stream_options), include_usage: true } }));
    return { model, stream, bytes, injected: true, maxOutputTokens: outputCap(o) };
  }
  return { model, stream, bytes: body, injected: false, maxOutputTokens: outputCap(o) };
}

/** The error body and status a vendor answers with, so the harness shows the reason as it shows the vendor's own. */
export function vendorError(
  vendor: Vendor,
  status: number,
  kind: "refused" | "budget" | "not_found" | "upstream" | "unauthorized" | "timeout",
  message: string,
  code: string,
) {
  // A spending limit, as each vendor answers its own: Anthropic a 400 invalid_request_error ("You have
  // reached your specified workspace API usage limits"), OpenAI a 429 insufficient_quota. Neither
  // is a rate limit to wait out: OpenAI's SDK retries a 429 twice, and the gateway refuses each retry at once.
  if (kind === "budget")
    return vendor === "anthropic"
      ? { status: 400, body: { type: "error", error: { type: "invalid_request_error", message } } }
      : { status: 429, body: { error: { message, type: "insufficient_quota", param: null, code: "insufficient_quota" } } };
  // A policy's refusal (a paused run, a suspended computer, a model off the allow-list) as a request
  // the vendor will not serve, never as a credential problem: Claude Code shows a 403 permission_error
  // as "Failed to authenticate", and Codex retries a 403 five times before it shows it (seen with
  // the real CLIs, test/harnesses/gateway.test.ts); both show a 400's message as it is, at once.
  if (kind === "refused")
    return vendor === "anthropic"
      ? { status: 400, body: { type: "error", error: { type: "invalid_request_error", message } } }
      : { status: 400, body: { error: { message, type: "invalid_request_error", param: null, code } } };
  if (vendor === "anthropic") {
    const type = {
      refused: "invalid_request_error",
      not_found: "not_found_error",
      upstream: "api_error",
      unauthorized: "authentication_error",
      timeout: "timeout_error",
    }[kind];
    return { status, body: { type: "error", error: { type, message } } };
  }
  const type = kind === "upstream" || kind === "timeout" ? "server_error" : "invalid_request_error";
  return { status, body: { error: { message, type, param: null, code } } };
}
