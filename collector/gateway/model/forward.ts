import { type ClientRequest, type IncomingMessage, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { envMs } from "../../lib/env.ts";
import { Remembered } from "../../lib/remembered.ts";
import { performance } from "node:perf_hooks";
import { parseObject } from "../../lib/json.ts";
import { agents, forwardHeaders, one, responseHeaders, sendJson, staleConnection, targetOf } from "../http.ts";
import { type Api, type Vendor, vendorError } from "./apis.ts";
import type { ModelRequestContext } from "./handler.ts";
import { answeredStep, type Carried } from "./record.ts";
import type { BudgetHold } from "./sink.ts";
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

/** The timeouts a recorder runs with: the defaults, or OXAGEN_GATEWAY_{CONNECT,FIRST_BYTE,IDLE}_MS. */
export function gatewayTimeouts(): GatewayTimeouts {
  return {
    connectMs: envMs("OXAGEN_GATEWAY_CONNECT_MS", 30_000),
    firstByteMs: envMs("OXAGEN_GATEWAY_FIRST_BYTE_MS", 600_000),
    idleMs: envMs("OXAGEN_GATEWAY_IDLE_MS", 300_000),
  };
}

/** An SSE event in the vendor's shape saying the vendor went silent (the stream's own error event). */
function timeoutEvent(vendor: Vendor, api: Api["name"], message: string): Buffer {
  if (vendor === "anthropic")
    return Buffer.from(`event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "timeout_error", message } })}\n\n`);
  if (api === "responses")
    return Buffer.from(`event: error\ndata: ${JSON.stringify({ type: "error", code: "timeout", message, param: null })}\n\n`);
  return Buffer.from(`data: ${JSON.stringify({ error: { message, type: "server_error", param: null, code: "timeout" } })}\n\n`);
}

/** A metered call on its way: the request handler's context and the call's budget hold. */
export type Call = ModelRequestContext & { hold: BudgetHold | null };

/**
 * Forwards a metered call, streams the answer back as it arrives, and records one `llm_call` once
 * it ends (docs/collector.md, "The gateway"). A connection the vendor closed while kept alive is
 * retried once, fresh; a vendor that does not connect, answer or go on in time is answered as the
 * vendor's own timeout (504 `timeout_error`), and recorded so.
 */
export function forwardModel(c: Call): void {
  new Forwarded(c).start();
}

interface Destination {
  target: URL;
  https: boolean;
  where: Forwarded["where"];
}

// A vendor's calls go to a few URLs (its upstream, a path or two): each made once, never changed after.
const destinations = new Remembered<Destination>(256);

function destinationOf(base: URL, url: URL): Destination {
  return destinations.get(`${base.href}\u0000${url.pathname}${url.search}`, () => {
    const target = targetOf(base, url);
    const https = target.protocol === "https:";
    const where = {
      protocol: target.protocol,
      hostname: target.hostname.startsWith("[") ? target.hostname.slice(1, -1) : target.hostname,
      port: target.port || (https ? 443 : 80),
      path: `${target.pathname}${target.search}`,
    };
    return { target, https, where };
  });
}

class Forwarded {
  readonly c: Call;
  readonly target: URL;
  readonly https: boolean;
  /** The request's options from the URL once, here (Node would convert the URL again for each request). */
  readonly where: { protocol: string; hostname: string; port: string | number; path: string };
  readonly meter: ReturnType<Api["meter"]>;
  readonly held: Buffer[] = [];
  heldBytes = 0;
  status = 0;
  ttfb: number | null = null;
  requestId: string | undefined;
  finished = false;
  timedOut: "connect" | "first_byte" | "idle" | null = null;
  upstreamResponse: IncomingMessage | null = null;
  up: ClientRequest | null = null;

  constructor(c: Call) {
    this.c = c;
    const d = destinationOf(c.sink.upstream(c.api.vendor), c.url);
    this.target = d.target;
    this.https = d.https;
    this.where = d.where;
    this.meter = c.api.meter();
  }

  start(): void {
    this.c.res.on("close", () => {
      if (this.c.res.writableFinished || this.finished) return;
      // The client left: stop the vendor, record the usage it reported until then.
      this.upstreamResponse?.socket?.destroy();
      this.up?.destroy();
      this.finish(true);
    });
    this.send(false);
  }

  elapsed(): number {
    return Math.max(0, Math.round(performance.now() - this.c.started));
  }

  /** Once per call: the llm_call (a call the vendor saw is recorded even when its client left). */
  finish(clientClosed: boolean): void {
    if (this.finished) return;
    this.finished = true;
    const { api, mr, stats } = this.c;
    if (!api.metered) return;
    const response = this.heldBytes <= MAX_GATEWAY_RESPONSE ? Buffer.concat(this.held) : null;
    if (response && !mr.stream && this.status > 0) {
      const o = parseObject(response.toString("utf8"));
      if (o) this.meter.json(o);
    }
    const seen = this.meter.seen();
    this.c.hold?.done(seen.model ?? mr.model, seen.usage);
    const carried: Carried = {
      vendor: api.vendor,
      model: mr.model,
      stream: mr.stream,
      status: this.status,
      latencyMs: this.elapsed(),
      ttfbMs: this.ttfb,
      request: mr.bytes,
      response,
      seen,
      ...(this.requestId ? { requestId: this.requestId } : {}),
      clientClosed,
      ...(this.timedOut && this.timedOut !== "connect" ? { timedOut: this.timedOut } : {}),
    };
    stats.carried++;
    stats.last_call_ms = Date.now();
    if (clientClosed) stats.client_closed++;
    const failed = (err: Error) => this.c.fail(`a ${api.vendor} call could not be recorded: ${err.message}`);
    try {
      const usage = seen.usage ?? { input_tokens: 0, output_tokens: 0 };
      const identity = seen.id ? { vendor: api.vendor, messageId: seen.id, model: seen.model ?? mr.model, usage } : null;
      this.c.sink.recordCall(this.c.session, carried, this.c.t, identity, failed);
    } catch (err) {
      failed(err as Error);
    }
  }

  /** Answers the client itself: the vendor was not reached, or did not answer in time. */
  answer(code: string, httpStatus: number, kind: "upstream" | "timeout", message: string): void {
    const { api, mr, stats, sink } = this.c;
    this.finished = true;
    this.c.hold?.done(mr.model, null);
    stats.answered++;
    sink.record(this.c.session, [answeredStep(code, httpStatus, api.vendor, mr.model)], this.c.t, null);
    const e = vendorError(api.vendor, httpStatus, kind, message, code);
    sendJson(this.c.res, e.status, e.body);
  }

  onResponse(up: ClientRequest, ur: IncomingMessage): void {
    const { res, mr } = this.c;
    this.upstreamResponse = ur;
    this.ttfb = this.elapsed();
    this.status = ur.statusCode ?? 0;
    this.requestId = one(ur.headers["request-id"]) ?? one(ur.headers["x-request-id"]);
    const sse = /^text\/event-stream/i.test(one(ur.headers["content-type"]) ?? "");
    const strip = sse && mr.injected;
    res.writeHead(this.status, responseHeaders(ur.headers, strip));
    const splitter = sse ? new SseSplitter() : null;
    const write = (bytes: Buffer) => {
      if (bytes.length && !res.write(bytes)) {
        ur.pause();
        res.once("drain", () => ur.resume());
      }
    };
    up.setTimeout(this.c.timeouts.idleMs, () => this.onIdle(ur, sse));
    ur.on("data", (chunk: Buffer) => {
      this.heldBytes += chunk.length;
      if (this.heldBytes <= MAX_GATEWAY_RESPONSE) this.held.push(chunk);
      if (!splitter) return write(chunk);
      const events = splitter.push(chunk);
      for (const e of events) this.meter.event(e);
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
      this.finish(false);
    });
    ur.on("error", () => {});
    ur.on("close", () => {
      if (ur.complete || this.finished) return;
      // The vendor's stream broke mid-way: the client sees it break too.
      this.c.fail(`${this.target.origin} closed a response mid-way`);
      res.destroy();
      this.finish(false);
    });
  }

  /** Silent between two bytes for too long: the client gets the vendor's own stream error, then the end. */
  onIdle(ur: IncomingMessage, sse: boolean): void {
    if (this.finished) return;
    const { res, api, timeouts } = this.c;
    this.timedOut = "idle";
    this.c.fail(`${this.target.origin} sent nothing for ${timeouts.idleMs} ms in the middle of a response; the call was ended`);
    const message = `the model vendor sent nothing for ${Math.round(timeouts.idleMs / 1000)} s; the Oxagen gateway ended the call`;
    if (sse && !res.writableEnded) res.end(timeoutEvent(api.vendor, api.name, message));
    else res.destroy();
    ur.socket?.destroy();
    this.finish(false);
  }

  send(fresh: boolean): void {
    const { mr, timeouts } = this.c;
    const sent = (this.https ? httpsRequest : httpRequest)({
      ...this.where,
      method: "POST",
      headers: forwardHeaders(this.c.req.headers, this.target.host, mr.bytes.length),
      // A retry's connection is its own, never one from the pool.
      agent: fresh ? false : this.https ? agents.https : agents.http,
    });
    this.up = sent;
    let connected = false;
    const connect = setTimeout(() => {
      if (connected || this.finished) return;
      this.timedOut = "connect";
      sent.destroy();
      this.c.fail(`${this.target.origin} did not accept a connection within ${timeouts.connectMs} ms`);
      const why = `the Oxagen gateway could not connect to ${this.target.origin} within ${Math.round(timeouts.connectMs / 1000)} s`;
      this.answer("upstream_timeout", 504, "timeout", why);
    }, timeouts.connectMs);
    connect.unref();
    sent.on("socket", (socket: Socket) => {
      const ready = () => {
        connected = true;
        clearTimeout(connect);
        // From the connection on: the vendor has this long to start its answer.
        sent.setTimeout(timeouts.firstByteMs, () => this.onFirstByteTimeout(sent));
      };
      if (socket.connecting) socket.once("connect", ready);
      else ready();
    });
    sent.on("response", (ur) => {
      clearTimeout(connect);
      this.onResponse(sent, ur);
    });
    sent.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(connect);
      this.onError(sent, fresh, err);
    });
    sent.end(mr.bytes);
  }

  onFirstByteTimeout(sent: ClientRequest): void {
    if (this.finished || this.upstreamResponse) return;
    const { api, res, timeouts } = this.c;
    this.timedOut = "first_byte";
    sent.destroy();
    this.c.fail(`${this.target.origin} did not answer within ${timeouts.firstByteMs} ms`);
    // The vendor had the request: the call is recorded as forwarded, with the timeout's status.
    this.status = 504;
    const why = `the model vendor did not answer within ${Math.round(timeouts.firstByteMs / 1000)} s`;
    const e = vendorError(api.vendor, 504, "timeout", why, "upstream_timeout");
    this.finish(false);
    sendJson(res, e.status, e.body);
  }

  onError(sent: ClientRequest, fresh: boolean, err: NodeJS.ErrnoException): void {
    if (this.finished || this.timedOut) return;
    if (!fresh && !this.upstreamResponse && staleConnection(sent, err)) {
      this.c.stats.retried++;
      this.send(true);
      return;
    }
    this.c.fail(`${this.target.origin}: ${err.message}`);
    if (this.c.res.headersSent) {
      this.c.res.destroy();
      this.finish(false);
      return;
    }
    this.answer("upstream_unreachable", 502, "upstream", `the Oxagen gateway could not reach ${this.target.origin}: ${err.message}`);
  }
}
