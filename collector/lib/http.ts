import { ErrorAnswer } from "../../protocol/index.ts";
import { ExitError } from "./errors.ts";

/** An answer read as JSON: its status, and its body (null when it is not JSON). */
export interface JsonAnswer {
  status: number;
  ok: boolean;
  body: unknown;
  headers: Headers;
}

/** The sentence for a server that could not be reached: fetch's own cause, not "fetch failed". */
export function unreachable(origin: string, err: unknown): string {
  const e = err as Error;
  return `cannot reach ${origin}: ${e.cause instanceof Error ? e.cause.message : e.message}`;
}

/** The server's reason for a refusal: its error code and sentence, or the status alone. */
export function refusal(answer: JsonAnswer): { code: string; message: string } {
  const parsed = ErrorAnswer.safeParse(answer.body);
  return parsed.success
    ? { code: parsed.data.error, message: parsed.data.message }
    : { code: `http_${answer.status}`, message: "no reason given" };
}

/**
 * One JSON request to an Oxagen server. A server that cannot be reached is an ExitError with
 * `unreachableExit` (the commands' "cannot reach the server" code); any answer is returned.
 */
export async function requestJson(
  url: URL,
  init: { method?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number },
  unreachableExit = 1,
): Promise<JsonAnswer> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method ?? (init.body !== undefined ? "POST" : "GET"),
      headers: { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...(init.headers ?? {}) },
      body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
      signal: AbortSignal.timeout(init.timeoutMs ?? 30_000),
    });
  } catch (err) {
    throw new ExitError(unreachableExit, unreachable(url.origin, err));
  }
  const body: unknown = await res.json().catch(() => null);
  return { status: res.status, ok: res.ok, body, headers: res.headers };
}
