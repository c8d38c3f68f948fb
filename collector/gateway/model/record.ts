import { isUtf8 } from "node:buffer";
import type { Payload, Policy } from "../../../protocol/index.ts";
import { bodyFields, makeBody } from "../../recorder/bodies.ts";
import type { DecisionRecord } from "../../recorder/decide.ts";
import type { Step } from "../../recorder/mapper.ts";
import { redactSse } from "./sse-redact.ts";
import type { Seen } from "./usage.ts";

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
  const request = makeBody("llm_request", c.request.toString("utf8"), retention, undefined, ownBytes(c.request));
  // A stream is scanned by its content (each delta's text, joined), not its SSE framing.
  const response = c.response
    ? makeBody("llm_response", c.response.toString("utf8"), retention, c.stream ? redactSse : undefined, ownBytes(c.response))
    : null;
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

/** Bytes that decode to a text which encodes back to them (valid UTF-8): what makeBody may hash as they are. */
function ownBytes(b: Buffer): Buffer | undefined {
  return isUtf8(b) ? b : undefined;
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
