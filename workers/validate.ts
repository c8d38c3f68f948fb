import type { Context, MiddlewareHandler } from "hono";
import { validator } from "hono/validator";
import { z } from "zod";
import { fromUtf8 } from "../protocol/index.ts";
import { type AppEnv, requireMediaType } from "./request-body.ts";
import { AppError } from "./errors.ts";

/** Checks a value against a schema; a mismatch is a 400 `invalid_request` with the issues. */
export function check<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new AppError(400, "invalid_request", `The ${what} is not valid.`, {
      issues: z.flattenError(result.error as z.ZodError<unknown>),
    });
  }
  return result.data;
}

/** Parses JSON text, or throws 400 `invalid_request`. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError(400, "invalid_request", `The ${what} is not JSON.`);
  }
}

/**
 * The request's JSON body (read under its limit by `readBodyFirst`): 415 unless it is sent as
 * JSON, 400 unless it is UTF-8 JSON. An empty body is `{}` when `emptyIs` says so.
 */
function jsonBody(c: Context<AppEnv>, what: string, emptyIs?: unknown): unknown {
  const bytes = c.var.body;
  if (bytes.length === 0 && emptyIs !== undefined) return emptyIs;
  requireMediaType(c.req.header("content-type"), "application/json");
  let text: string;
  try {
    text = fromUtf8(bytes);
  } catch {
    throw new AppError(400, "invalid_request", `The ${what} is not UTF-8.`);
  }
  return parseJson(text, what);
}

type Target = "json" | "query" | "param" | "header";
type Validated<T extends Target, S extends z.ZodType> = MiddlewareHandler<
  AppEnv,
  string,
  { in: { [K in T]: z.input<S> }; out: { [K in T]: z.output<S> } }
>;

/** How {@link valid} names what it checks, and what an empty JSON body is. */
export interface ValidOptions {
  /** Named in the error's sentence ("The lease request is not valid."); by default after the target. */
  what?: string;
  /** A JSON body with no bytes: `{}` (the default), or refused like any body that is not JSON. */
  empty?: "object" | "refused";
}

const WHAT: Record<Target, string> = { json: "request body", query: "query", param: "path", header: "header" };

/**
 * The one validation middleware: every route's JSON body, query, params and headers go through
 * it. A JSON body must come as JSON (415 otherwise); no body at all is `{}` unless `empty` refuses it.
 */
export function valid<T extends Target, S extends z.ZodType>(target: T, schema: S, options: ValidOptions = {}): Validated<T, S> {
  const what = options.what ?? WHAT[target];
  if (target === "json") {
    const emptyIs = options.empty === "refused" ? undefined : {};
    const json: MiddlewareHandler<AppEnv> = async (c, next) => {
      c.req.addValidatedData("json", check(schema, jsonBody(c, what, emptyIs), what) as object);
      await next();
    };
    return json as unknown as Validated<T, S>;
  }
  return validator(target, (value) => check(schema, value, what)) as unknown as Validated<T, S>;
}

/** Refuses (415) a request whose body is not sent as `type`: the routes that take raw bytes. */
export function bodyOfType(type: "application/octet-stream"): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    requireMediaType(c.req.header("content-type"), type);
    await next();
  };
}
