/**
 * Several bodies of one run in one host-signed request (`POST /v1/bodies`): a
 * `multipart/form-data` body, one part per body, the part's name its role and its file name its
 * SHA-256 (lowercase hex of the bytes after redaction, as the frame names it). The run is the
 * signed `x-oxagen-run` header. The server checks every part before it stores any: a part whose
 * hash, role or size is wrong refuses the whole request (400, 413) and stores nothing; a body the
 * workspace does not keep, or one that still holds a credential, is answered per part.
 */
import { z } from "zod";
import { bytesToHex } from "./bytes.ts";
import type { BodyRole } from "./frames.ts";
import { sha256 } from "./hash.ts";
import { Sha256Hex } from "./ids.ts";

/** The most bodies one upload request carries. */
export const MAX_UPLOAD_BODIES = 64;
/** The largest upload request, in bytes (each part at most `MAX_BODY_BYTES`). */
export const MAX_UPLOAD_BYTES = 8 * 1024 * 1024;

/** One body to upload. */
export interface UploadBody {
  role: z.output<typeof BodyRole>;
  bytes: Uint8Array;
  /** Its SHA-256 (lowercase hex of `bytes`) when the caller has it already; computed here otherwise. */
  sha256?: string;
}

/**
 * The most bytes {@link encodeUpload} adds to an upload besides the bodies' own, per part, the
 * closing line counted as one more part: an upload of n bodies is at most their bytes plus
 * `(n + 1) × UPLOAD_PART_OVERHEAD`, for fitting it under {@link MAX_UPLOAD_BYTES}.
 */
export const UPLOAD_PART_OVERHEAD = 256;

const CRLF = new Uint8Array([13, 10]);

/**
 * The request body and its `content-type` for an upload of `bodies`: sign exactly these bytes and
 * send exactly this content type. The boundary is 128 random bits, so no body holds it by chance
 * and no recorded text can aim at it.
 */
export function encodeUpload(bodies: UploadBody[]): { contentType: string; bytes: Uint8Array } {
  const boundary = `oxagen-${bytesToHex(crypto.getRandomValues(new Uint8Array(16)))}`;
  const text = new TextEncoder();
  const chunks: Uint8Array[] = [];
  for (const b of bodies) {
    const sha = b.sha256 ?? bytesToHex(sha256(b.bytes));
    chunks.push(
      text.encode(
        `--${boundary}\r\ncontent-disposition: form-data; name="${b.role}"; filename="${sha}"\r\ncontent-type: application/octet-stream\r\n\r\n`,
      ),
      b.bytes,
      CRLF,
    );
  }
  chunks.push(text.encode(`--${boundary}--\r\n`));
  const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return { contentType: `multipart/form-data; boundary=${boundary}`, bytes };
}

/** How the server took one body of an upload. */
export const UploadResult = z.strictObject({
  sha256: Sha256Hex,
  /** `stored` (new in R2), `duplicate` (already there), or refused: `not_retained`, `body_refused` (the run records the gap). */
  status: z.enum(["stored", "duplicate", "not_retained", "body_refused"]),
  message: z.string().optional(),
});

/** One of {@link UploadResult}. */
export type UploadResult = z.output<typeof UploadResult>;

/** The answer to an upload: one result per part, in the request's order. */
export const UploadAnswer = z.strictObject({ results: z.array(UploadResult) });
