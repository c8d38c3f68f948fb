// The gateway's HTTP plumbing, shared by each side it carries (today the model APIs): who may call
// it, reading a request, the headers that never pass, the upstream connection pools, piping.
import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { carriesSecret, HOOK_SECRET_HEADER, loopbackRequest, SECRET_PATH, sendJson } from "../lib/loopback.ts";
import { GATEWAY_HEADERS } from "./session.ts";

export { sendJson };

/** The most request bytes the gateway reads (a vendor's own limit is about 32 MB). */
export const MAX_GATEWAY_REQUEST = 32 * 1024 * 1024;

/**
 * Whether a request may use the gateway: a loopback Host and Origin (403 otherwise, so a web page
 * cannot reach it through DNS rebinding) and this enrollment's secret (else `unauthorized` answers
 * it in the side's own shape). A refused request's body is drained.
 */
export function admitted(
  req: IncomingMessage,
  res: ServerResponse,
  port: number,
  secret: (now?: boolean) => string | null,
  unauthorized: (message: string) => void,
): boolean {
  if (!loopbackRequest(req, port)) {
    req.resume();
    sendJson(res, 403, { error: "forbidden", message: "the Oxagen gateway answers loopback clients only" });
    return false;
  }
  if (!carriesSecret(req.headers[HOOK_SECRET_HEADER], secret)) {
    // Loopback is shared by every user of the computer: only this enrollment's harnesses may use it.
    req.resume();
    unauthorized(
      `the Oxagen gateway takes calls from this enrollment's harnesses only (header ${HOOK_SECRET_HEADER}; tacho enroll --gateway writes it)`,
    );
    return false;
  }
  return true;
}

/**
 * A request whose path begins with `/k/<secret>` (a harness that cannot send a header: Stella's
 * provider base URL) carries the enrollment's secret there: it is taken off the path and checked as
 * the header is; the rest of the path is the request's. Never forwarded either way.
 */
export function keyedUrl(req: IncomingMessage, url: URL): URL {
  if (!url.pathname.startsWith(SECRET_PATH)) return url;
  const rest = url.pathname.slice(SECRET_PATH.length);
  const slash = rest.indexOf("/");
  if (slash <= 0) return url;
  if (req.headers[HOOK_SECRET_HEADER] === undefined) req.headers[HOOK_SECRET_HEADER] = rest.slice(0, slash);
  const out = new URL(url.href);
  out.pathname = rest.slice(slash);
  return out;
}

/** Reads a request's body up to `limit` bytes; `done(null, size)` when it was larger (what was over is not held). */
export function readBody(req: IncomingMessage, limit: number, done: (body: Buffer | null, size: number) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  req.on("data", (c: Buffer) => {
    size += c.length;
    if (size <= limit) chunks.push(c);
  });
  req.on("error", () => {});
  req.on("end", () => done(size > limit ? null : Buffer.concat(chunks), size));
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

/** Kept-alive connections to the upstreams, one pool per scheme. */
export const agents = {
  http: new HttpAgent({ keepAlive: true, noDelay: true }),
  https: new HttpsAgent({ keepAlive: true, noDelay: true }),
};

/** The headers sent upstream: the caller's own (its credentials included), never a hop-by-hop or a gateway header. */
export function forwardHeaders(h: IncomingMessage["headers"], host: string, length: number | null): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || HOP.has(k) || k === "host" || k === "content-length" || k === "accept-encoding") continue;
    if (GATEWAY_HEADERS.includes(k)) continue;
    out[k] = v;
  }
  out.host = host;
  // What passes is read on its way (usage): it must arrive uncompressed.
  out["accept-encoding"] = "identity";
  if (length !== null) out["content-length"] = length;
  return out;
}

/** The upstream's response headers as the caller gets them (`dropLength` when the body is changed on the way). */
export function responseHeaders(h: IncomingMessage["headers"], dropLength: boolean): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined || HOP.has(k) || (dropLength && k === "content-length")) continue;
    out[k] = v;
  }
  return out;
}

/** The upstream URL of a request: the upstream's base path, then the request's path and query. */
export function targetOf(base: URL, url: URL): URL {
  const target = new URL(base.href);
  target.pathname = `${base.pathname.replace(/\/+$/, "")}${url.pathname}`;
  target.search = url.search;
  return target;
}

/** A header's first value. */
export function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Whether a request failed on a kept-alive connection the upstream had already closed, before any
 * byte of an answer: the upstream never took it (Node's own advice for `reusedSocket`), so it is
 * sent again, once, on a fresh connection. Never a request the upstream may have begun to answer.
 */
export function staleConnection(up: ClientRequest, err: NodeJS.ErrnoException): boolean {
  return up.reusedSocket && (err.code === "ECONNRESET" || err.code === "EPIPE" || err.code === "ECONNABORTED");
}

/** Forwards a request as it is, piped both ways (nothing read, nothing recorded). */
export function pipeThrough(req: IncomingMessage, res: ServerResponse, target: URL, fail: (m: string) => void): void {
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
