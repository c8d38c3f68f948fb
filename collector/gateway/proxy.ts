import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import type { ModelCall, ModelVerdict } from "../recorder/decide.ts";
import { HOOK_SECRET_HEADER, loopbackRequest, secretMatches, sendJson } from "../lib/loopback.ts";
import type { Step } from "../recorder/mapper.ts";
import {
  type Api,
  type ModelRequest,
  readModelRequest,
  routeOf,
  sessionOfHeaders,
  type Vendor,
  vendorError,
  vendorOfPath,
} from "./apis.ts";
import { forwardModel, type GatewayTimeouts, gatewayTimeouts, pipeUnmetered, targetOf } from "./forward.ts";
import type { CallIdentity } from "../recorder/carried.ts";
import { answeredStep, type Carried, refusalStep } from "./record.ts";
import type { Seen } from "./usage.ts";

/** A session a call names in its headers (apis.ts `sessionOfHeaders`). */
export type GatewaySession = NonNullable<ReturnType<typeof sessionOfHeaders>>;

/** What the gateway needs from the recorder: the policy check, the record, and where each vendor is. */
export interface GatewaySink {
  /** The run a session's call belongs to (for a paused run); null for a call tied to none. */
  runId(session: GatewaySession | null): string | null;
  /**
   * The budget: reserves the call's maximum cost before it is checked (waiting for the server only
   * when the run's slice cannot hold it); absent or null when nothing is reserved.
   */
  reserve?(call: ModelCall, api: Api, mr: ModelRequest): BudgetHold | Promise<BudgetHold> | null;
  /** The policy's check of a call, with its budget hold (refused when the hold has no room). */
  decide(call: ModelCall, hold?: BudgetHold | null): ModelVerdict;
  /** Appends frames to the session's chain (the computer's own when null), once per id; through the recorder's one append path. Never throws: a failure is logged. */
  record(session: GatewaySession | null, steps: Step[], t: number, id: string | null): void;
  /**
   * Appends a forwarded call's `llm_call`: its bodies are redacted and hashed off the event loop
   * when large, its place and id (from its identity, for the usage logs to match) taken now
   * (docs/collector.md, "The gateway"); `onError` when it could not be recorded.
   */
  recordCall(session: GatewaySession | null, call: Carried, t: number, identity: CallIdentity | null, onError: (err: Error) => void): void;
  upstream(vendor: Vendor): URL;
  /** The enrollment's secret every call must carry (header x-oxagen-hook-secret); null for an enrollment without one. */
  secret(): string | null;
  log(msg: string): void;
}

/** A call's budget reservation (see collector/gateway/lease.ts): why it has none, and how it ends. */
export interface BudgetHold {
  /** The reason the budget has no room for the call; null when it is reserved (or let through). */
  refused: string | null;
  /** Whether the call holds a reservation the server's lease granted (false: let through unreserved, or refused). */
  reserved: boolean;
  /** Replaces the reservation with what the call cost (its usage; null when nothing was billed). */
  done(model: string, usage: Seen["usage"]): void;
}

/** What `tacho status` shows of the gateway. */
export interface GatewayStats {
  carried: number;
  refused: number;
  answered: number;
  unmetered: number;
  client_closed: number;
  /** Calls sent again on a fresh connection: the kept-alive one had been closed by the vendor before it took them. */
  retried: number;
  last_call_ms: number | null;
  last_error: { t: number; message: string } | null;
}

export function emptyStats(): GatewayStats {
  return { carried: 0, refused: 0, answered: 0, unmetered: 0, client_closed: 0, retried: 0, last_call_ms: null, last_error: null };
}

/** The most request bytes the gateway reads (a vendor's own limit is about 32 MB). */
export const MAX_GATEWAY_REQUEST = 32 * 1024 * 1024;

/**
 * The gateway's request handler (docs/collector.md, "The gateway"): loopback Host and Origin only;
 * a model call is checked by the policy, forwarded with the caller's own credentials, streamed back
 * as it arrives, and recorded as one `llm_call` once the response ends.
 */
export function gatewayHandler(
  port: number,
  sink: GatewaySink,
  stats: GatewayStats,
  timeouts: GatewayTimeouts = gatewayTimeouts(),
): (req: IncomingMessage, res: ServerResponse) => void {
  const fail = (message: string) => {
    stats.last_error = { t: Date.now(), message: message.slice(0, 512) };
    sink.log(`gateway: ${message}`);
  };
  return (req, res) => {
    const started = performance.now();
    const t = Date.now();
    if (!loopbackRequest(req, port)) {
      req.resume();
      sendJson(res, 403, { error: "forbidden", message: "the Oxagen gateway answers loopback clients only" });
      return;
    }
    const url = new URL(req.url ?? "/", "http://gateway");
    const method = req.method ?? "GET";
    const secret = sink.secret();
    if (secret !== null && !secretMatches(req.headers[HOOK_SECRET_HEADER], secret)) {
      // Loopback is shared by every user of the computer: only this enrollment's harnesses may use it.
      req.resume();
      const message = `the Oxagen gateway takes calls from this enrollment's harnesses only (header ${HOOK_SECRET_HEADER}; tacho enroll --gateway writes it)`;
      const e = vendorError(vendorOfPath(url.pathname, req.headers), 401, "unauthorized", message, "oxagen_unauthorized");
      sendJson(res, e.status, e.body);
      return;
    }
    const session = sessionOfHeaders(req.headers);
    const route = routeOf(method, url.pathname);
    if (route === "refused") {
      req.resume();
      const vendor = vendorOfPath(url.pathname, req.headers);
      stats.answered++;
      sink.record(session, [answeredStep("unknown_path", 404, vendor)], t, null);
      const message = `the Oxagen gateway does not forward ${method} ${url.pathname.slice(0, 200)}: only the model APIs it meters (docs/collector.md, "The gateway")`;
      const e = vendorError(vendor, 404, "not_found", message, "oxagen_unknown_path");
      sendJson(res, e.status, e.body);
      return;
    }
    if (route === "unmetered") {
      stats.unmetered++;
      pipeUnmetered(req, res, targetOf(sink.upstream(vendorOfPath(url.pathname, req.headers)), url), fail);
      return;
    }
    const api = route.api;
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= MAX_GATEWAY_REQUEST) chunks.push(c);
    });
    req.on("error", () => {});
    req.on("end", () => {
      if (size > MAX_GATEWAY_REQUEST) {
        stats.answered++;
        sink.record(session, [answeredStep("request_too_large", 413, api.vendor)], t, null);
        const e = vendorError(
          api.vendor,
          413,
          "refused",
          `the request is over the ${MAX_GATEWAY_REQUEST} bytes the Oxagen gateway reads`,
          "request_too_large",
        );
        sendJson(res, e.status, e.body);
        return;
      }
      const body = Buffer.concat(chunks);
      const mr = readModelRequest(api, body);
      const call = { model: mr.model, runId: sink.runId(session), agent: session?.harness ?? null };
      const go = (hold: BudgetHold | null) => {
        const verdict = sink.decide(call, hold);
        if (verdict.record) sink.record(session, [refusalStep(verdict.record)], t, null);
        if (!verdict.forward) {
          hold?.done(mr.model, null);
          stats.refused++;
          const rule = verdict.record?.rule ?? "policy";
          const reason = verdict.record?.reason ?? "refused by the workspace's policy";
          const e = vendorError(
            api.vendor,
            400,
            rule === "budget" ? "budget" : "refused",
            `Oxagen refused this model call: ${reason}`,
            rule,
          );
          sendJson(res, e.status, e.body, { "x-oxagen-refused": rule });
          return;
        }
        forwardModel({ req, res, api, mr, session, url, t, started, sink, stats, fail, hold, timeouts });
      };
      const hold = sink.reserve?.(call, api, mr) ?? null;
      if (!(hold instanceof Promise)) return go(hold);
      // The call waits for the server's lease; a client that leaves meanwhile is not forwarded.
      let left = false;
      const leave = () => {
        left = true;
      };
      res.once("close", leave);
      void hold
        .then((h) => {
          res.off("close", leave);
          if (left) {
            h?.done(mr.model, null);
            stats.answered++;
            sink.record(session, [answeredStep("client_closed", 499, api.vendor, mr.model)], t, null);
            return;
          }
          try {
            go(h);
          } catch (err) {
            h?.done(mr.model, null);
            throw err;
          }
        })
        .catch((err: Error) => {
          // Not an unhandled rejection (it would end the recorder): the call fails, the gateway goes on.
          fail(`a ${api.vendor} call could not be reserved or forwarded: ${err.message}`);
          if (!res.headersSent) sendJson(res, 502, { error: "bad_gateway", message: "the Oxagen gateway could not forward this call" });
          else res.destroy();
        });
    });
  };
}
