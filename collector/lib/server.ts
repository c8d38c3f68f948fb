import { fromHex, signRequest } from "../../protocol/index.ts";
import type { HostConfig } from "./state.ts";

/** A host-signed call's options: header names lowercase, as protocol/auth.ts signs them. */
export interface HostFetchOptions {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  body?: Uint8Array;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/**
 * Calls this host's server, signed with the host key over the server's origin, the path, the
 * body and the headers the server acts on (protocol/auth.ts). Each call, a retry included, is
 * signed afresh with a new time and nonce. Rejects as fetch does.
 */
export function hostFetch(host: HostConfig, path: string, opts: HostFetchOptions = {}): Promise<Response> {
  const method = opts.method ?? (opts.body ? "POST" : "GET");
  const body = opts.body ?? new Uint8Array();
  const headers = opts.headers ?? {};
  const auth = hostAuth(host, method, path, headers, body);
  return fetch(new URL(path, host.server), {
    method,
    headers: { ...headers, ...auth },
    body: method === "GET" ? undefined : (body as Uint8Array<ArrayBuffer>),
    signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
  });
}

/** The auth headers of one host-signed request (a fresh time and nonce each call). */
export function hostAuth(
  host: HostConfig,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Uint8Array = new Uint8Array(),
) {
  return signRequest(fromHex(host.secret_key, 32), {
    origin: host.server,
    method,
    pathAndQuery: path,
    hostId: host.host_id,
    headers,
    body,
  });
}
