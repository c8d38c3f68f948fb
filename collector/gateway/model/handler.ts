import type { IncomingMessage, ServerResponse } from "node:http";
import { MAX_GATEWAY_REQUEST, pipeThrough, readBody, sendJson, targetOf } from "../http.ts";
import { type GatewaySession, sessionOfHeaders } from "../session.ts";
import { type Api, type ModelRequest, readModelRequest, routeOf, vendorError, vendorOfPath } from "./apis.ts";
import { forwardModel, type GatewayTimeouts } from "./forward.ts";
import { answeredStep, refusalStep } from "./record.ts";
import type { BudgetHold, ModelSink } from "./sink.ts";

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

/** The model side of the gateway: what it does with a request the gateway admitted. */
export interface ModelSide {
  /** Answers a request without the enrollment's secret, in its vendor's shape. */
  unauthorized(req: IncomingMessage, res: ServerResponse, url: URL, message: string): void;
  /** A model API call (checked, forwarded, recorded), a model list (piped), or a path it refuses. */
  handle(req: IncomingMessage, res: ServerResponse, url: URL, t: number, started: number): void;
}

/** One metered call while the gateway holds it: everything its check and its forwarding need. */
export interface ModelRequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  api: Api;
  mr: ModelRequest;
  session: GatewaySession | null;
  url: URL;
  t: number;
  started: number;
  sink: ModelSink;
  stats: GatewayStats;
  fail: (m: string) => void;
  timeouts: GatewayTimeouts;
}

/**
 * The model side (docs/collector.md, "The gateway"): a model call is checked by the policy,
 * forwarded with the caller's own credentials, streamed back as it arrives, and recorded as one
 * `llm_call` once the response ends.
 */
export function modelSide(sink: ModelSink, stats: GatewayStats, timeouts: GatewayTimeouts): ModelSide {
  const fail = (message: string) => {
    stats.last_error = { t: Date.now(), message: message.slice(0, 512) };
    sink.log(`gateway: ${message}`);
  };
  return {
    unauthorized(req, res, url, message) {
      const e = vendorError(vendorOfPath(url.pathname, req.headers), 401, "unauthorized", message, "oxagen_unauthorized");
      sendJson(res, e.status, e.body);
    },
    handle(req, res, url, t, started) {
      const method = req.method ?? "GET";
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
        pipeThrough(req, res, targetOf(sink.upstream(vendorOfPath(url.pathname, req.headers)), url), fail);
        return;
      }
      const api = route.api;
      readBody(req, MAX_GATEWAY_REQUEST, (body) => {
        if (body === null) {
          stats.answered++;
          sink.record(session, [answeredStep("request_too_large", 413, api.vendor)], t, null);
          const why = `the request is over the ${MAX_GATEWAY_REQUEST} bytes the Oxagen gateway reads`;
          const e = vendorError(api.vendor, 413, "refused", why, "request_too_large");
          sendJson(res, e.status, e.body);
          return;
        }
        const mr = readModelRequest(api, body);
        checkThenForward({ req, res, api, mr, session, url, t, started, sink, stats, fail, timeouts });
      });
    },
  };
}

/** Reserves the call's budget (waiting for the server's lease when it must), checks it, then forwards it or refuses it. */
function checkThenForward(c: ModelRequestContext): void {
  const { res, mr, session, sink, stats, t, api } = c;
  const call = { model: mr.model, runId: sink.runId(session), agent: session?.harness ?? null };
  const go = (hold: BudgetHold | null) => {
    const verdict = sink.decide(call, hold);
    if (verdict.record) sink.record(session, [refusalStep(verdict.record)], t, null);
    if (verdict.forward) {
      forwardModel({ ...c, hold });
      return;
    }
    hold?.done(mr.model, null);
    stats.refused++;
    const rule = verdict.record?.rule ?? "policy";
    const reason = verdict.record?.reason ?? "refused by the workspace's policy";
    const e = vendorError(api.vendor, 400, rule === "budget" ? "budget" : "refused", `Oxagen refused this model call: ${reason}`, rule);
    sendJson(res, e.status, e.body, { "x-oxagen-refused": rule });
  };
  const hold = sink.reserve?.(call, api, mr) ?? null;
  if (!(hold instanceof Promise)) {
    go(hold);
    return;
  }
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
      c.fail(`a ${api.vendor} call could not be reserved or forwarded: ${err.message}`);
      if (!res.headersSent) sendJson(res, 502, { error: "bad_gateway", message: "the Oxagen gateway could not forward this call" });
      else res.destroy();
    });
}
