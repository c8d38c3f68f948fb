import { ErrorAnswer, fromHex, ROUTES, signRequest } from "../../protocol/index.ts";
import type { HostConfig } from "./state.ts";

/** A host-signed call's options: header names lowercase, as protocol/auth.ts signs them. */
export interface HostFetchOptions {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  body?: Uint8Array;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** Ends the call early (with the timeout, whichever comes first). */
  signal?: AbortSignal;
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
    signal: opts.signal
      ? AbortSignal.any([opts.signal, AbortSignal.timeout(opts.timeoutMs ?? 30_000)])
      : AbortSignal.timeout(opts.timeoutMs ?? 30_000),
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
/** Unenrolls this host on its server (`DELETE /v1/host`, signed with its key); "gone" when it already does not know this host's key (unenrolled by an operator). */
export async function unenrollOnServer(host: HostConfig): Promise<"unenrolled" | "gone" | { error: string }> {
  try {
    const res = await hostFetch(host, ROUTES.hostStatus, { method: "DELETE", timeoutMs: 15_000 });
    if (res.ok) return "unenrolled";
    const answer = ErrorAnswer.safeParse(await res.json().catch(() => null));
    if (res.status === 401 && answer.success && answer.data.error === "bad_signature") return "gone";
    return { error: `HTTP ${res.status}: ${answer.success ? answer.data.message : "no reason given"}` };
  } catch (err) {
    return { error: `cannot reach ${host.server}: ${(err as Error).message}` };
  }
}
