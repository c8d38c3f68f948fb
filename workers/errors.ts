import type { ContentfulStatusCode } from "hono/utils/http-status";

/** A known error: a stable code, an HTTP status and a sentence for the caller. */
export class AppError extends Error {
  readonly code: string;
  readonly status: ContentfulStatusCode;
  constructor(status: ContentfulStatusCode, code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AppError";
    this.code = code;
    this.status = status;
  }
}
