import { type IncomingMessage, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

/** What {@link nodeFetch} sends: a method, headers, an optional body, and the signal that ends it. */
export interface NodeFetchInit {
  method: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  signal: AbortSignal;
}

/**
 * One request on node:http, answered as fetch answers: a Response with the whole body read, or a
 * rejection with the signal's reason once it fires (a TimeoutError for AbortSignal.timeout).
 * On Node's global agents: kept alive (idle sockets unref'd and closed after 5 s), and through the
 * proxy Node is told to use (NODE_USE_ENV_PROXY). The recorder ships through it: undici's fetch
 * costs 1.2 to 3 times its CPU per request (docs/collector.md, "Budget reservations", **Cost**).
 */
export function nodeFetch(url: URL, init: NodeFetchInit): Promise<Response> {
  return new Promise((resolve, reject) => {
    const https = url.protocol === "https:";
    const fail = (err: Error) => reject(init.signal.aborted ? init.signal.reason : err);
    const headers = init.body ? { ...init.headers, "content-length": String(init.body.length) } : init.headers;
    const req = (https ? httpsRequest : httpRequest)(url, { method: init.method, headers, signal: init.signal }, (res) =>
      read(res, resolve, fail),
    );
    req.on("error", fail);
    req.end(init.body);
  });
}

function read(res: IncomingMessage, resolve: (r: Response) => void, fail: (err: Error) => void): void {
  const chunks: Buffer[] = [];
  res.on("data", (c: Buffer) => chunks.push(c));
  const cut = (why: string) => fail(new Error(`the server closed the connection before the answer's end (${why})`));
  res.on("error", (err) => cut(err.message));
  res.on("close", () => {
    if (!res.complete) cut("closed");
  });
  res.on("end", () => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (v === undefined) continue;
      if (Array.isArray(v)) for (const one of v) headers.append(k, one);
      else headers.set(k, v);
    }
    const status = res.statusCode ?? 0;
    // A Response refuses a body with these statuses, and any status outside 200-599.
    const body = status === 204 || status === 205 || status === 304 ? null : Buffer.concat(chunks);
    if (status < 200 || status > 599) return fail(new Error(`the server answered with HTTP status ${status}, outside 200-599`));
    resolve(new Response(body, { status, statusText: res.statusMessage ?? "", headers }));
  });
}
