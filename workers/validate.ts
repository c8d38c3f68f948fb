import type { Context } from "hono";
import { validator } from "hono/validator";
import { z } from "zod";
import { AppError } from "./errors.ts";

type Target = "json" | "query" | "param";

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

/** The one validation middleware: every route's json, query and params go through it. */
export function valid<T extends Target, S extends z.ZodType>(target: T, schema: S) {
  return validator(target, (value, _c: Context) =>
    check(schema, value, target === "json" ? "request body" : target === "query" ? "query" : "path"),
  );
}
