import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

/** What {@link nodeFetch} sends: a method, headers, an optional body, and the signal that ends it. */
export interface NodeFetchInit {
  method: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  signal: AbortSignal;
}

// Idle kept-alive sockets are unref'd by Node's agent, so a command that is done still exits.
const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

/**
 * One request on node:http, answered as fetch answers: a Response with the whole body read, or a
 * rejection with the signal's reason once it fires (a TimeoutError for AbortSignal.timeout).
 * The recorder ships through it: undici's fetch costs 2 to 2.5 times its CPU per request
 * (docs/collector.md, "Budget reservations", **Cost**).
 */
export function nodeFetch(url: URL, init: NodeFetchInit): Promise<Response> {
  return new Promise((resolve, reject) => {
    const https = url.protocol === "https:";
    const fail = (err: Error) => reject(init.signal.aborted ? init.signal.reason : err);
    const headers = init.body ? { ...init.headers, "content-length": String(init.body.length) } : init.headers;
    const req = (https ? httpsRequest : httpRequest)(
      url,
      { method: init.method, headers, agent: https ? agents.https : agents.http, signal: init.signal },
      (res) => read(res, resolve, fail),
    );
    req.on("error", fail);
    req.end(init.body);
  });
}

function read(res: IncomingMessage, resolve: (r: Response) => void, fail: (err: Error) => void): void {
  const chunks: Buffer[] = [];
  res.on("data", (c: Buffer) => chunks.push(c));
  res.on("error", fail);
  res.on("close", () => {
    if (!res.complete) fail(new Error("the server closed the connection before the answer's end"));
  });
  res.on("end", () => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (v === undefined) continue;
      if (Array.isArray(v)) for (const one of v) headers.append(k, one);
      else headers.set(k, v);
    }
    const status = res.statusCode ?? 0;
    // A Response refuses a body with these statuses.
    const body = status === 204 || status === 205 || status === 304 ? null : Buffer.concat(chunks);
    resolve(new Response(body, { status, statusText: res.statusMessage ?? "", headers }));
  });
}
