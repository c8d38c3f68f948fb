import { Hono } from "hono";
import { z } from "zod";
import {
  BODY_HEADERS,
  BodyRole,
  bytesToHex,
  MAX_BODY_BYTES,
  MAX_UPLOAD_BODIES,
  ROUTES,
  RunId,
  Sha256Hex,
  sha256,
} from "../../protocol/index.ts";
import { type HostEnv, hostAuth } from "../auth/host.ts";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { AppError, notFound } from "../errors.ts";
import { bodyKey } from "../lib/body-store.ts";
import { type IntakeBody, takeBodies } from "../lib/body-intake.ts";
import { bodyOfType, valid } from "../validate.ts";

const BodyPath = z.object({ sha256: Sha256Hex });
const BodyHeaders = z.object({ [BODY_HEADERS.run]: RunId, [BODY_HEADERS.role]: BodyRole });
const UploadHeaders = z.object({ [BODY_HEADERS.run]: RunId });

const STATUS = { stored: 201, duplicate: 200, not_retained: 409, body_refused: 422 } as const;

/**
 * A body for a run, by its SHA-256. Checked in this order, each before anything is stored: size,
 * host signature, the hash, the run is this host's, the workspace keeps this role (protocol's
 * `keepFor`, the rule the collector decided it with), and no credential is left in it
 * (`lib/body-intake.ts`). A credential found is the one refusal that leaves a trace: a
 * `body_refused` gap on the run. A body already in R2 is not written again.
 */
export const bodies = new Hono<HostEnv>()
  .put(
    ROUTES.body.pattern,
    hostAuth(),
    bodyOfType("application/octet-stream"),
    valid("param", BodyPath, { what: "body hash in the path" }),
    valid("header", BodyHeaders, { what: `${BODY_HEADERS.run} or ${BODY_HEADERS.role} header` }),
    async (c) => {
      const sha = c.req.valid("param").sha256;
      const { [BODY_HEADERS.run]: runId, [BODY_HEADERS.role]: role } = c.req.valid("header");
      if (bytesToHex(sha256(c.var.body)) !== sha) throw hashMismatch("The body's SHA-256 is not the one in the path.");
      const [r] = await takeBodies(c.env, c.var.host, runId, [{ sha256: sha, role, bytes: c.var.body }]);
      if (r!.status === "not_retained") throw new AppError(409, "not_retained", r!.message!);
      if (r!.status === "body_refused") throw new AppError(422, "body_refused", r!.message!);
      return c.json({ sha256: sha, stored: r!.status === "stored", duplicate: r!.status === "duplicate" }, STATUS[r!.status]);
    },
  )
  /**
   * Several bodies of one run in one request (protocol/uploads.ts): every part is checked (its
   * role, its file name a SHA-256 of its bytes, at most 1 MiB, at most 64 parts) before any is
   * stored, then each is taken as a single PUT takes it, answered per part.
   */
  .post(ROUTES.bodies, hostAuth(), valid("header", UploadHeaders, { what: `${BODY_HEADERS.run} header` }), async (c) => {
    const runId = c.req.valid("header")[BODY_HEADERS.run];
    const parts = await uploadParts(c.req.header("content-type"), c.var.body);
    return c.json({ results: await takeBodies(c.env, c.var.host, runId, parts) });
  });

const hashMismatch = (message: string) => new AppError(400, "hash_mismatch", message);

/** The parts of a `multipart/form-data` upload, each checked; any bad part refuses the whole request. */
async function uploadParts(contentType: string | undefined, body: Uint8Array): Promise<IntakeBody[]> {
  if (!/^multipart\/form-data\s*;/i.test(contentType ?? ""))
    throw new AppError(
      415,
      "unsupported_media_type",
      `The request body must be sent as multipart/form-data, not ${contentType || "no Content-Type"}.`,
    );
  let form: FormData;
  try {
    form = await new Response(body, { headers: { "content-type": contentType! } }).formData();
  } catch {
    throw new AppError(400, "invalid_request", "The upload is not a readable multipart/form-data body.");
  }
  const entries = [...form.entries()];
  if (entries.length === 0) throw new AppError(400, "invalid_request", "The upload holds no body.");
  if (entries.length > MAX_UPLOAD_BODIES)
    throw new AppError(413, "too_large", `An upload carries at most ${MAX_UPLOAD_BODIES} bodies; this one has ${entries.length}.`);
  const parts: IntakeBody[] = [];
  for (const [name, value] of entries) {
    const role = BodyRole.safeParse(name);
    if (!role.success || typeof value === "string")
      throw new AppError(
        400,
        "invalid_request",
        `Each part is a body named by its role (${BodyRole.options.join(", ")}), with its SHA-256 as its file name; "${name}" is not.`,
      );
    const sha = Sha256Hex.safeParse(value.name);
    if (!sha.success)
      throw new AppError(400, "invalid_request", `A part's file name must be its body's SHA-256 in lowercase hex; "${value.name}" is not.`);
    if (value.size > MAX_BODY_BYTES)
      throw new AppError(413, "too_large", `A body is at most ${MAX_BODY_BYTES} bytes; ${sha.data} has ${value.size}.`);
    const bytes = new Uint8Array(await value.arrayBuffer());
    if (bytesToHex(sha256(bytes)) !== sha.data) throw hashMismatch(`The part named ${sha.data} does not hash to its name.`);
    parts.push({ sha256: sha.data, role: role.data, bytes });
  }
  return parts;
}

/**
 * An operator reads a body of the workspace by its SHA-256 (`oxagen export --bodies`): the bytes
 * as they were stored, which hash to the name. One R2 read; 404 for a body the workspace does not
 * hold (never kept, not received, or another workspace's).
 */
export const operatorBodies = new Hono<OperatorEnv>().get(
  ROUTES.body.pattern,
  operatorAuth,
  valid("param", BodyPath, { what: "body hash in the path" }),
  async (c) => {
    const sha = c.req.valid("param").sha256;
    const obj = await c.env.BODIES.get(bodyKey(c.var.workspaceId, sha));
    if (!obj) throw notFound("body");
    const headers: Record<string, string> = {
      "content-type": "application/octet-stream",
      etag: `"${sha}"`,
      "content-length": String(obj.size),
    };
    const role = obj.customMetadata?.role;
    if (role) headers[BODY_HEADERS.role] = role;
    return c.body(obj.body, 200, headers);
  },
);
