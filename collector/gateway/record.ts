import { sha256Hex, type Payload, type Policy } from "../../protocol/index.ts";
import { bodyFields, makeBody } from "../recorder/bodies.ts";
import type { DecisionRecord } from "../recorder/decide.ts";
import type { Step } from "../recorder/mapper.ts";
import type { Seen } from "./usage.ts";

/**
 * The journal id of the `llm_call` the gateway recorded for a vendor response: the transcript and
 * rollout readers skip a response whose id the journal already holds, so a call is counted once.
 */
export function gatewayCallId(vendor: string, messageId: string): string {
  return `gw-${sha256Hex(`${vendor}\u0000${messageId}`).slice(0, 40)}`;
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
