import { guardedFetch } from "./egress.ts";
import type { HttpBinding } from "./schema.ts";

/** An argument a binding cannot place (a header value with a line break, a path value that is not a scalar). */
export class ArgumentUnplaceable extends Error {
  override readonly name = "ArgumentUnplaceable";
}

const scalar = (v: unknown): string => {
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return String(v);
  throw new ArgumentUnplaceable("only a string, number or boolean can go in a URL or a header");
};

/** The outbound request of an HTTP binding for a call's arguments (the credential header not yet added). */
export function httpRequestOf(b: HttpBinding, args: Record<string, unknown>): { url: URL; init: RequestInit & { headers: Headers } } {
  const inPath = new Set([...b.path.matchAll(/\{([A-Za-z0-9_.-]+)\}/g)].map((m) => m[1]!));
  const path = b.path.replace(/\{([A-Za-z0-9_.-]+)\}/g, (_all, name: string) => {
    if (args[name] === undefined) throw new ArgumentUnplaceable(`the path needs the argument ${name}`);
    return encodeURIComponent(scalar(args[name]));
  });
  const url = new URL(path, b.origin);
  const headers = new Headers(b.headers);
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined || inPath.has(name)) continue;
    const place = b.args[name] ?? { in: b.method === "GET" || b.method === "DELETE" ? "query" : "body" };
    const as = place.name ?? name;
    if (place.in === "query") {
      for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(as, scalar(v));
    } else if (place.in === "header") {
      const text = scalar(value);
      if (/[\r\n\0]/.test(text)) throw new ArgumentUnplaceable(`the header value of ${name} holds a line break`);
      headers.set(as, text);
    } else if (place.in === "body") body[as] = value;
    else url.pathname = url.pathname.replace(`{${as}}`, encodeURIComponent(scalar(value)));
  }
  const hasBody = Object.keys(body).length > 0 && b.method !== "GET";
  if (hasBody) headers.set("content-type", "application/json");
  return { url, init: { method: b.method, headers, ...(hasBody ? { body: JSON.stringify(body) } : {}) } };
}

/** The answer of an HTTP tool: its status and text, or that it was over the binding's size cap. */
export type HttpAnswer = { status: number; text: string } | { status: number; tooLarge: true };

/** Sends the request (egress-checked, no redirect followed) and reads at most `max_response_bytes` of the answer. */
export async function callHttp(
  b: HttpBinding,
  req: { url: URL; init: RequestInit },
  allowLoopback: boolean,
  signal: AbortSignal,
): Promise<HttpAnswer> {
  const res = await guardedFetch(allowLoopback)(req.url, { ...req.init, signal });
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > b.max_response_bytes) {
    await res.body?.cancel();
    return { status: res.status, tooLarge: true };
  }
  const reader = res.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > b.max_response_bytes) {
      await reader.cancel().catch(() => undefined);
      return { status: res.status, tooLarge: true };
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { status: res.status, text: new TextDecoder().decode(bytes) };
}
