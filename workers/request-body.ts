import { createMiddleware } from "hono/factory";
import { MAX_SMALL_BODY_BYTES, ROUTE_BODY_LIMITS } from "../protocol/index.ts";
import { AppError } from "./errors.ts";

/**
 * The HTTP request's body (not a recorded body: those are `routes/bodies.ts` and R2). The Hono env
 * of every route: the request body, read once under its route's limit.
 */
export type AppEnv = { Bindings: Env; Variables: { body: Uint8Array } };

/** The largest operator policy body. */
export const MAX_POLICY_INPUT_BYTES = 1024 * 1024;
/** The operator's policy route, the one operator route with a body limit of its own. */
export const WORKSPACE_POLICY_PATH = "/v1/workspaces/:id/policy";

// Each route's pattern as a regular expression: a `:name` segment matches any one segment.
const LIMITS = [...ROUTE_BODY_LIMITS, { method: "PUT", path: WORKSPACE_POLICY_PATH, bytes: MAX_POLICY_INPUT_BYTES }].map((l) => ({
  ...l,
  re: new RegExp(`^${l.path.replace(/:[A-Za-z0-9_]+/g, "[^/]+")}$`),
}));

/** The body limit of a route: its own in `ROUTE_BODY_LIMITS` (protocol/api.ts) or the operator policy's, else 64 KiB. */
export function bodyLimit(method: string, path: string): number {
  return LIMITS.find((l) => l.method === method && l.re.test(path))?.bytes ?? MAX_SMALL_BODY_BYTES;
}

const tooLarge = (limit: number) => new AppError(413, "too_large", `The request body is over ${limit} bytes.`);

/**
 * Reads a request's body, refusing it (413) as soon as it is over `limit`: a declared
 * Content-Length is checked before a byte is read, and a chunked body is counted as it streams.
 */
export async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/**
 * The first middleware of every request: reads the body under its route's limit before any
 * authentication or parsing, so an oversized body costs nothing but the bytes up to the limit.
 */
export const readBodyFirst = createMiddleware<AppEnv>(async (c, next) => {
  c.set("body", await readLimited(c.req.raw, bodyLimit(c.req.method, c.req.path)));
  await next();
});

/** The media type of a Content-Type header, lowercase, without parameters. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase();
}

/** Refuses (415) a request body whose Content-Type is not `expected` (JSON: also any `+json` type). */
export function requireMediaType(contentType: string | undefined, expected: "application/json" | "application/octet-stream"): void {
  const type = mediaType(contentType);
  const ok = expected === "application/json" ? /^application\/(?:[\w.-]+\+)?json$/.test(type) : type === expected;
  if (!ok)
    throw new AppError(415, "unsupported_media_type", `The request body must be sent as ${expected}, not ${type || "no Content-Type"}.`);
}
