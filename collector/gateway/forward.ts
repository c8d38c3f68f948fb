import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { performance } from "node:perf_hooks";
import { parseObject } from "../lib/json.ts";
import { sendJson } from "../lib/loopback.ts";
import { type Api, GATEWAY_HEADERS, type ModelRequest, type Vendor, vendorError } from "./apis.ts";
import type { BudgetHold, GatewaySession, GatewaySink, GatewayStats } from "./proxy.ts";
import { answeredStep, type Carried } from "./record.ts";
import { SseSplitter } from "./sse.ts";
import { usageOnlyChunk } from "./usage.ts";

/** The most response bytes held for the frame's digest and body; a larger response is forwarded, its digest not recorded. */
export const MAX_GATEWAY_RESPONSE = 32 * 1024 * 1024;

/**
 * How long the gateway waits on a vendor (docs/collector.md, "Timeouts"): to connect, for the first
 * response byte once the request is sent (a non-streamed call's whole answer: the vendors' SDKs wait
 * 10 minutes), and between two bytes of a response.
 */
export interface GatewayTimeouts {
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
}

const envMs = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isSafeInteger(v) && v > 0 ? v : fallback;
};

/** The timeouts a recorder runs with: the defaults, or OXAGEN_GATEWAY_{CONNECT,FIRST_BYTE,IDLE}_MS. */
export function gatewayTimeouts(): GatewayTimeouts {
  return {
    connectMs: envMs("OXAGEN_GATEWAY_CONNECT_MS", 30_000),
    firstByteMs: envMs("OXAGEN_GATEWAY_FIRST_BYTE_MS", 600_000),
    idleMs: envMs("OXAGEN_GATEWAY_IDLE_MS", 300_000),
  };
}

const HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

const agents = { http: new HttpAgent({ keepAlive: true, noDelay: true }), https: new HttpsAgent({ keepAlive: true, noDelay: true }) };

function forwardHeaders(h: IncomingMessage["headers"], host: string, length: number | null): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || HOP.has(k) || k === "host" || k === "content-length" || k === "accept-encoding") continue;
    if (GATEWAY_HEADERS.includes(k)) continue;
    out[k] = v;
  }
  out.host = host;
  // Usage is read from the response as it passes: it must arrive uncompressed.
  out["accept-encoding"] = "identity";
  if (length !== null) out["content-length"] = length;
  return out;
}

function responseHeaders(h: IncomingMessage["headers"], dropLength: boolean): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || HOP.has(k) || (dropLength && k === "content-length")) continue;
    out[k] = v;
  }
  return out;
}

export function targetOf(base: URL, url: URL): URL {
  const target = new URL(base.href);
  target.pathname = `${base.pathname.replace(/\/+$/, "")}${url.pathname}`;
  target.search = url.search;
  return target;
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Whether a request failed on a kept-alive connection the vendor had already closed, before any
 * byte of an answer: the vendor never took it (Node's own advice for `reusedSocket`), so it is sent
 * again, once, on a fresh connection. Never a request the vendor may have begun to answer.
 */
function staleConnection(up: ClientRequest, err: NodeJS.ErrnoException): boolean {
  return up.reusedSocket && (err.code === "ECONNRESET" || err.code === "EPIPE" || err.code === "ECONNABORTED");
}

/** Forwards an unmetered call (a GET, a HEAD) as it is, piped both ways. */
export function pipeUnmetered(req: IncomingMessage, res: ServerResponse, target: URL, fail: (m: string) => void): void {
  const length = req.headers["content-length"] !== undefined ? Number(req.headers["content-length"]) : null;
  const up = (target.protocol === "https:" ? httpsRequest : httpRequest)(target, {
    method: req.method,
    headers: forwardHeaders(req.headers, target.host, length),
    agent: target.protocol === "https:" ? agents.https : agents.http,
  });
  up.on("response", (ur) => {
    res.writeHead(ur.statusCode ?? 502, responseHeaders(ur.headers, false));
    ur.pipe(res);
  });
  up.on("error", (err) => {
    fail(`${target.origin}: ${err.message}`);
    if (!res.headersSent) sendJson(res, 502, { error: "bad_gateway", message: `the Oxagen gateway could not reach ${target.origin}` });
    else res.destroy();
  });
  res.on("close", () => {
    if (!res.writableFinished) up.destroy();
  });
  req.pipe(up);
}

/** A metered call on its way: what forwardModel needs from the request handler. */
export interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  api: Api;
  mr: ModelRequest;
  session: GatewaySession | null;
  url: URL;
  t: number;
  started: number;
  sink: GatewaySink;
  stats: GatewayStats;
  fail: (m: string) => void;
  hold: BudgetHold | null;
  timeouts: GatewayTimeouts;
}

/** An SSE event in the vendor's shape saying the vendor went silent (the stream's own error event). */
function timeoutEvent(vendor: Vendor, api: Api["name"], message: string): Buffer {
  if (vendor === "anthropic")
    return Buffer.from(`event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "timeout_error", message } })}\n\n`);
  if (api === "responses")
    return Buffer.from(`event: error\ndata: ${JSON.stringify({ type: "error", code: "timeout", message, param: null })}\n\n`);
  return Buffer.from(`data: ${JSON.stringify({ error: { message, type: "server_error", param: null, code: "timeout" } })}\n\n`);
}

/**
 * Forwards a metered call, streams the answer back as it arrives, and records one `llm_call` once
 * it ends (docs/collector.md, "The gateway"). A connection the vendor closed while kept alive is
 * retried once, fresh; a vendor that does not connect, answer or go on in time is answered as the
 * vendor's own timeout (504 `timeout_error`), and recorded so.
 */
export function forwardModel(c: Call): void {
  const { res, api, mr, sink, stats } = c;
  const target = targetOf(sink.upstream(api.vendor), c.url);
  const https = target.protocol === "https:";
  // The request's options from the URL once, here (Node would convert the URL again for each request).
  const where = {
    protocol: target.protocol,
    hostname: target.hostname.startsWith("[") ? target.hostname.slice(1, -1) : target.hostname,
    port: target.port || (https ? 443 : 80),
    path: `${target.pathname}${target.search}`,
  };
  const meter = api.meter();
  const held: Buffer[] = [];
  let heldBytes = 0;
  let status = 0;
  let ttfb: number | null = null;
  let requestId: string | undefined;
  let finished = false;
  let timedOut: "connect" | "first_byte" | "idle" | null = null;
  let upstreamResponse: IncomingMessage | null = null;
  let up: ClientRequest;
  const elapsed = () => Math.max(0, Math.round(performance.now() - c.started));

  // Once per call: the llm_call (a call the vendor saw is recorded even when its client left).
  const finish = (clientClosed: boolean) => {
    if (finished) return;
    finished = true;
    if (!api.metered) return;
    const response = heldBytes <= MAX_GATEWAY_RESPONSE ? Buffer.concat(held) : null;
    if (response && !mr.stream && status > 0) {
      const o = parseObject(response.toString("utf8"));
      if (o) meter.json(o);
    }
    const seen = meter.seen();
    c.hold?.done(seen.model ?? mr.model, seen.usage);
    const carried: Carried = {
      vendor: api.vendor,
      model: mr.model,
      stream: mr.stream,
      status,
      latencyMs: elapsed(),
      ttfbMs: ttfb,
      request: mr.bytes,
      response,
      seen,
      ...(requestId ? { requestId } : {}),
      clientClosed,
      ...(timedOut && timedOut !== "connect" ? { timedOut } : {}),
    };
    stats.carried++;
    stats.last_call_ms = Date.now();
    if (clientClosed) stats.client_closed++;
    const failed = (err: Error) => c.fail(`a ${api.vendor} call could not be recorded: ${err.message}`);
    try {
      const identity = seen.id
        ? {
            vendor: api.vendor,
            messageId: seen.id,
            model: seen.model ?? mr.model,
            usage: seen.usage ?? { input_tokens: 0, output_tokens: 0 },
          }
        : null;
      sink.recordCall(c.session, carried, c.t, identity, failed);
    } catch (err) {
      failed(err as Error);
    }
  };

  /** Answers the client itself: the vendor was not reached, or did not answer in time. */
  const answer = (code: string, httpStatus: number, kind: "upstream" | "timeout", message: string) => {
    finished = true;
    c.hold?.done(mr.model, null);
    stats.answered++;
    sink.record(c.session, [answeredStep(code, httpStatus, api.vendor, mr.model)], c.t, null);
    const e = vendorError(api.vendor, httpStatus, kind, message, code);
    sendJson(res, e.status, e.body);
  };

  const onResponse = (ur: IncomingMessage) => {
    upstreamResponse = ur;
    ttfb = elapsed();
    status = ur.statusCode ?? 0;
    requestId = one(ur.headers["request-id"]) ?? one(ur.headers["x-request-id"]);
    const sse = /^text\/event-stream/i.test(one(ur.headers["content-type"]) ?? "");
    const strip = sse && mr.injected;
    res.writeHead(status, responseHeaders(ur.headers, strip));
    const splitter = sse ? new SseSplitter() : null;
    const write = (bytes: Buffer) => {
      if (bytes.length && !res.write(bytes)) {
        ur.pause();
        res.once("drain", () => ur.resume());
      }
    };
    // Silent between two bytes for too long: the client gets the vendor's own stream error, then the end.
    up.setTimeout(c.timeouts.idleMs, () => {
      if (finished) return;
      timedOut = "idle";
      c.fail(`${target.origin} sent nothing for ${c.timeouts.idleMs} ms in the middle of a response; the call was ended`);
      const message = `the model vendor sent nothing for ${Math.round(c.timeouts.idleMs / 1000)} s; the Oxagen gateway ended the call`;
      if (sse && !res.writableEnded) res.end(timeoutEvent(api.vendor, api.name, message));
      else res.destroy();
      ur.socket?.destroy();
      finish(false);
    });
    ur.on("data", (chunk: Buffer) => {
      heldBytes += chunk.length;
      if (heldBytes <= MAX_GATEWAY_RESPONSE) held.push(chunk);
      if (!splitter) return write(chunk);
      const events = splitter.push(chunk);
      for (const e of events) meter.event(e);
      if (!strip) return write(chunk);
      // The usage chunk the gateway asked for is the client's only when it asked for it too.
      for (const e of events) {
        const o = e.data.startsWith("{") ? parseObject(e.data) : null;
        if (!(o && usageOnlyChunk(o))) write(e.raw);
      }
    });
    ur.on("end", () => {
      if (strip && splitter) write(splitter.rest());
      res.end();
      // After the client's end went out and before any other event runs: a hook that follows
      // this response (and the transcript reader it starts) finds the call already recorded.
      finish(false);
    });
    ur.on("error", () => {});
    ur.on("close", () => {
      if (ur.complete || finished) return;
      // The vendor's stream broke mid-way: the client sees it break too.
      c.fail(`${target.origin} closed a response mid-way`);
      res.destroy();
      finish(false);
    });
  };

  const send = (fresh: boolean) => {
    up = (https ? httpsRequest : httpRequest)({
      ...where,
      method: "POST",
      headers: forwardHeaders(c.req.headers, target.host, mr.bytes.length),
      // A retry's connection is its own, never one from the pool.
      agent: fresh ? false : https ? agents.https : agents.http,
    });
    const sent = up;
    let connected = false;
    const connect = setTimeout(() => {
      if (connected || finished) return;
      timedOut = "connect";
      sent.destroy();
      c.fail(`${target.origin} did not accept a connection within ${c.timeouts.connectMs} ms`);
      answer(
        "upstream_timeout",
        504,
        "timeout",
        `the Oxagen gateway could not connect to ${target.origin} within ${Math.round(c.timeouts.connectMs / 1000)} s`,
      );
    }, c.timeouts.connectMs);
    connect.unref();
    sent.on("socket", (socket) => {
      const ready = () => {
        connected = true;
        clearTimeout(connect);
        // From the connection on: the vendor has this long to start its answer.
        sent.setTimeout(c.timeouts.firstByteMs, () => {
          if (finished || upstreamResponse) return;
          timedOut = "first_byte";
          sent.destroy();
          c.fail(`${target.origin} did not answer within ${c.timeouts.firstByteMs} ms`);
          // The vendor had the request: the call is recorded as forwarded, with the timeout's status.
          status = 504;
          const e = vendorError(
            api.vendor,
            504,
            "timeout",
            `the model vendor did not answer within ${Math.round(c.timeouts.firstByteMs / 1000)} s`,
            "upstream_timeout",
          );
          finish(false);
          sendJson(res, e.status, e.body);
        });
      };
      if (socket.connecting) socket.once("connect", ready);
      else ready();
    });
    sent.on("response", (ur) => {
      clearTimeout(connect);
      onResponse(ur);
    });
    sent.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(connect);
      if (finished || timedOut) return;
      if (!fresh && !upstreamResponse && staleConnection(sent, err)) {
        stats.retried++;
        send(true);
        return;
      }
      if (res.headersSent) {
        c.fail(`${target.origin}: ${err.message}`);
        res.destroy();
        finish(false);
        return;
      }
      c.fail(`${target.origin}: ${err.message}`);
      answer("upstream_unreachable", 502, "upstream", `the Oxagen gateway could not reach ${target.origin}: ${err.message}`);
    });
    sent.end(mr.bytes);
  };

  res.on("close", () => {
    if (res.writableFinished || finished) return;
    // The client left: stop the vendor, record the usage it reported until then.
    (upstreamResponse as IncomingMessage | null)?.socket?.destroy();
    up.destroy();
    finish(true);
  });
  send(false);
}
