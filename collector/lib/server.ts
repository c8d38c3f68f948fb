import { ErrorAnswer, fromHex, HealthAnswer, originOf, ROUTES, signRequest } from "../../protocol/index.ts";
import { ExitError } from "./errors.ts";
import { requestJson } from "./http.ts";
import { nodeFetch } from "./node-fetch.ts";
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
 * signed afresh with a new time and nonce. Rejects as fetch does (on node:http: see nodeFetch).
 */
export function hostFetch(host: HostConfig, path: string, opts: HostFetchOptions = {}): Promise<Response> {
  const method = opts.method ?? (opts.body ? "POST" : "GET");
  const body = opts.body ?? new Uint8Array();
  const headers = opts.headers ?? {};
  const auth = hostAuth(host, method, path, headers, body);
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 30_000);
  return nodeFetch(new URL(path, host.server), {
    method,
    headers: { ...headers, ...auth },
    ...(method === "GET" ? {} : { body }),
    signal: opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout,
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
/**
 * The server's own origin (`GET /healthz`), the one it checks host signatures against, when `server`
 * is another name for it (`localhost` for `127.0.0.1`, another address that reaches it): every
 * request signed for `server` would be refused. Null when they agree, or when the server does not
 * name its origin (one from before it did). A server that cannot be reached is an ExitError.
 */
export async function otherOrigin(server: string): Promise<string | null> {
  const answer = await requestJson(new URL(ROUTES.health, server), { timeoutMs: 15_000 });
  const health = HealthAnswer.safeParse(answer.body);
  if (!answer.ok || !health.success || health.data.origin === undefined) return null;
  const origin = originOf(health.data.origin);
  return origin === originOf(server) ? null : origin;
}

/**
 * Unenrolls this host on its server (`DELETE /v1/host`, signed with its key); "gone" when it already
 * does not know this host's key (unenrolled by an operator). A refused signature is "gone" only when
 * it was signed for the server's own origin: one signed for another name of the server says so.
 */
export async function unenrollOnServer(host: HostConfig): Promise<"unenrolled" | "gone" | { error: string }> {
  try {
    const res = await hostFetch(host, ROUTES.hostStatus, { method: "DELETE", timeoutMs: 15_000 });
    if (res.ok) return "unenrolled";
    const answer = ErrorAnswer.safeParse(await res.json().catch(() => null));
    if (res.status === 401 && answer.success && answer.data.error === "bad_signature") {
      const origin = await otherOrigin(host.server);
      if (origin === null) return "gone";
      return {
        error: `this computer signs its requests for ${host.server}, the URL it enrolled with, but the server's origin is ${origin}, so it refuses them [wrong_origin]`,
      };
    }
    return { error: `HTTP ${res.status}: ${answer.success ? answer.data.message : "no reason given"}` };
  } catch (err) {
    return { error: err instanceof ExitError ? err.message : `cannot reach ${host.server}: ${(err as Error).message}` };
  }
}
