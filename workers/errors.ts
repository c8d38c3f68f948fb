import type { ContentfulStatusCode } from "hono/utils/http-status";

/** A known error: a stable code, an HTTP status and a sentence for the caller. */
export class AppError extends Error {
  readonly code: string;
  readonly status: ContentfulStatusCode;
  /** Extra structured detail for the answer (validation issues); never internal state. */
  readonly issues: unknown;
  /** Further members of the answer beside `error` and `message` (e.g. the exhausted budget scope); never internal state. */
  readonly fields: Record<string, unknown>;
  constructor(
    status: ContentfulStatusCode,
    code: string,
    message: string,
    options?: { cause?: unknown; issues?: unknown; fields?: Record<string, unknown> },
  ) {
    super(message, options);
    this.name = "AppError";
    this.code = code;
    this.status = status;
    this.issues = options?.issues;
    this.fields = options?.fields ?? {};
  }
}

/** 404 for anything missing or in another workspace: the answer never reveals which. */
export function notFound(what: string): AppError {
  return new AppError(404, "not_found", `No such ${what}.`);
}
