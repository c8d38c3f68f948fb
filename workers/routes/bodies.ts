import { and, eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { BODY_HEADERS, BodyRole, bytesToHex, keepFor, ROUTES, RunId, Sha256Hex, sha256 } from "../../protocol/index.ts";
import { findCredentials } from "../../protocol/redact.ts";
import { type HostEnv, hostAuth } from "../auth/host.ts";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db, schema } from "../db/client.ts";
import { AppError, notFound } from "../errors.ts";
import { syncRun } from "../lib/run-rows.ts";
import { parseRoles } from "../lib/policy-store.ts";
import { bodyKey } from "../lib/body-store.ts";
import { bodyOfType, valid } from "../validate.ts";

const BodyPath = z.object({ sha256: Sha256Hex });
const BodyHeaders = z.object({ [BODY_HEADERS.run]: RunId, [BODY_HEADERS.role]: BodyRole });

/**
 * A body for a run, by its SHA-256. Checked in this order, each before anything is stored: size,
 * host signature, the run is this host's, the hash, the workspace keeps this role (protocol's
 * `keepFor`, the rule the collector decided it with), and no credential is left in it. A
 * credential found is the one refusal that leaves a trace: a `body_refused` gap on the run. A body
 * already in R2 is not written again.
 */
export const bodies = new Hono<HostEnv>().put(
  ROUTES.body.pattern,
  hostAuth(),
  bodyOfType("application/octet-stream"),
  valid("param", BodyPath, { what: "body hash in the path" }),
  valid("header", BodyHeaders, { what: `${BODY_HEADERS.run} or ${BODY_HEADERS.role} header` }),
  async (c) => {
    const bytes = c.var.body;
    const host = c.var.host;
    const sha = c.req.valid("param").sha256;
    const { [BODY_HEADERS.run]: runId, [BODY_HEADERS.role]: role } = c.req.valid("header");
    const d = db(c.env);
    const run = await d
      .select({ id: schema.runs.id })
      .from(schema.runs)
      .where(and(eq(schema.runs.id, runId), eq(schema.runs.hostId, host.id)))
      .get();
    if (!run) throw notFound("run");
    if (bytesToHex(sha256(bytes)) !== sha) throw new AppError(400, "hash_mismatch", "The body's SHA-256 is not the one in the path.");
    const ws = await d.select().from(schema.workspaces).where(eq(schema.workspaces.id, host.workspaceId)).get();
    if (!ws) throw new AppError(500, "internal", "The host's workspace is missing.");
    const keep = keepFor({ mode: ws.retentionMode, keep: parseRoles(ws.retentionKeep) }, role);
    if (keep === "digest_only") throw new AppError(409, "not_retained", "The workspace keeps digests only: no body is stored.");
    if (keep === "retention") throw new AppError(409, "not_retained", `The workspace does not keep ${role} bodies.`);
    const stub = c.env.CHAINS.get(c.env.CHAINS.idFromName(runId));
    const found = findCredentials(new TextDecoder().decode(bytes));
    if (found.length > 0) {
      const kinds = [...new Set(found.map((f) => f.kind))].sort();
      await syncRun(d, await stub.bodyRefused(sha, role, kinds));
      throw new AppError(
        422,
        "body_refused",
        `The body still holds a credential (${kinds.join(", ")}); it was refused and the run records the gap.`,
      );
    }
    const key = bodyKey(host.workspaceId, sha);
    const present = (await c.env.BODIES.head(key)) !== null;
    if (!present) await c.env.BODIES.put(key, bytes, { sha256: sha, customMetadata: { role } });
    await stub.bodyReceived(sha, Date.now());
    return c.json({ sha256: sha, stored: !present, duplicate: present }, present ? 200 : 201);
  },
);

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
