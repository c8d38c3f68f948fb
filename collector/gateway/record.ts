import { sha256Hex, type Payload, type Policy } from "../../protocol/index.ts";
import { bodyFields, makeBody } from "../recorder/bodies.ts";
import type { DecisionRecord } from "../recorder/decide.ts";
import type { Step } from "../recorder/mapper.ts";
import type { Seen } from "./usage.ts";

type Usage = Payload<"llm_call">["usage"];

/** What makes two reports of a model call the same call: its vendor, message id, model and billed usage (on one chain). */
export interface CallIdentity {
  vendor: string;
  messageId: string;
  model: string;
  usage: Usage;
}

/** A model name without the date a vendor appends to the one asked for (`gpt-5` answered as `gpt-5-2025-08-07`). */
function undated(model: string): string {
  return model.replace(/-(?:\d{8}|\d{4}-\d{2}-\d{2})$/, "");
}

/**
 * The key of a call's identity on one chain (docs/collector.md, "Counted once"): the gateway's
 * `llm_call` of it is recorded under {@link carriedId}, and a usage log's report of the same call
 * on the same chain is matched to it once. Vendors reuse message ids (a local server, a replay), so
 * the id alone is not the call: a call of another chain, model or usage is another call.
 */
export function callKey(chain: string, c: CallIdentity): string {
  const u = c.usage;
  const parts = [
    chain,
    c.vendor,
    c.messageId,
    undated(c.model),
    u.input_tokens,
    u.output_tokens,
    u.cache_read_tokens ?? 0,
    u.cache_write_tokens ?? 0,
  ];
  return `gw-${sha256Hex(parts.join("\u0000")).slice(0, 40)}`;
}

/** The journal id of the gateway's n-th call (from 0) with one {@link callKey}: each call it carried is recorded. */
export function carriedId(key: string, n: number): string {
  return n === 0 ? key : `${key}.${n}`;
}

/** The id the gateway records its next call of a key under: the first the journal does not hold. */
export function nextCarriedId(has: (id: string) => boolean, key: string): string {
  for (let n = 0; ; n++) if (!has(carriedId(key, n))) return carriedId(key, n);
}

/** The suffix of the id marking a carried call as matched to a usage log's report of it. */
export const MATCHED = "~read";

/** The first call the gateway carried under a key that no usage log's report was matched to yet; null when none. */
export function unmatchedCarried(has: (id: string) => boolean, key: string): string | null {
  for (let n = 0; ; n++) {
    const id = carriedId(key, n);
    if (!has(id)) return null;
    if (!has(`${id}${MATCHED}`)) return id;
  }
}

/** One forwarded call as the gateway saw it go by. */
export interface Carried {
  vendor: string;
  model: string;
  stream: boolean;
  status: number;
  latencyMs: number;
  ttfbMs: number | null;
  request: Buffer;
  /** The vendor's response bytes; null when it was larger than the gateway holds (then no digest). */
  response: Buffer | null;
  seen: Seen;
  requestId?: string;
  clientClosed: boolean;
  /** The vendor went silent past the gateway's timeout (forward.ts GatewayTimeouts) and the gateway ended the call. */
  timedOut?: "first_byte" | "idle";
}

/** The `llm_call` of a call the gateway forwarded, with its request and response bodies (redacted, then hashed). */
export function llmCallStep(c: Carried, retention: Policy["retention"] | null): Step {
  const request = makeBody("llm_request", c.request.toString("utf8"), retention);
  const response = c.response ? makeBody("llm_response", c.response.toString("utf8"), retention) : null;
  const bodies = response ? [request, response] : [request];
  const payload: Payload<"llm_call"> = {
    path: "gateway",
    ...bodyFields(bodies),
    vendor: c.vendor,
    model: (c.seen.model ?? c.model).slice(0, 256),
    forwarded: true,
    status: c.status,
    latency_ms: c.latencyMs,
    ...(c.ttfbMs !== null ? { ttfb_ms: c.ttfbMs } : {}),
    ...(c.clientClosed ? { client_closed: true as const } : {}),
    ...(c.timedOut ? { timed_out: c.timedOut } : {}),
    stream: c.stream,
    usage: c.seen.usage ?? { input_tokens: 0, output_tokens: 0 },
    request: request.digest,
    ...(response ? { response: response.digest } : {}),
    ...(c.seen.id ? { message_id: c.seen.id.slice(0, 256) } : {}),
    ...(c.requestId ? { request_id: c.requestId.slice(0, 256) } : {}),
  };
  return { kind: "llm_call", payload, bodies };
}

/** The `policy_decision` of a model call the gateway refused (or, in observe mode, would have). */
export function refusalStep(record: DecisionRecord & { model: string }): Step {
  return { kind: "policy_decision", payload: { path: "gateway", ...record }, bodies: [] };
}

/** The `error` of a call the gateway answered itself, without forwarding it. */
export function answeredStep(code: string, status: number, vendor: string, model?: string): Step {
  return {
    kind: "error",
    payload: { path: "gateway", code, forwarded: false, status, vendor, ...(model ? { model: model.slice(0, 256) } : {}) },
    bodies: [],
  };
}
