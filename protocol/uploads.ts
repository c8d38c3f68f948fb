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
import { type BodyRole, MAX_BODY_BYTES } from "./frames.ts";
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
}

/**
 * The request body and its `content-type` for an upload of `bodies` (their hashes computed
 * here): sign exactly these bytes and send exactly this content type.
 */
export async function encodeUpload(bodies: UploadBody[]): Promise<{ contentType: string; bytes: Uint8Array }> {
  const form = new FormData();
  for (const b of bodies) {
    const copy = new Uint8Array(b.bytes.length);
    copy.set(b.bytes);
    form.append(b.role, new Blob([copy], { type: "application/octet-stream" }), bytesToHex(sha256(b.bytes)));
  }
  const res = new Response(form);
  return { contentType: res.headers.get("content-type")!, bytes: new Uint8Array(await res.arrayBuffer()) };
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
