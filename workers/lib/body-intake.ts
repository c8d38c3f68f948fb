import { keepFor, type UploadBody, type UploadResult } from "../../protocol/index.ts";
import { findCredentials } from "../../protocol/redact.ts";
import type { HostRow } from "../auth/host.ts";
import { notFound } from "../errors.ts";
import { bodyKey } from "./body-store.ts";
import { workspaceObject } from "./policy-store.ts";

/** A body as an upload carries it, its hash already checked against its bytes. */
export interface IntakeBody {
  sha256: string;
  role: UploadBody["role"];
  bytes: Uint8Array;
}

/**
 * Takes bodies of one run from its host, one upload (`PUT /v1/bodies/:sha256` or
 * `POST /v1/bodies`): the run must be the host's (its ChainObject says, so a run whose fleet row
 * the projection has not written yet is found too: 404 otherwise), each body kept by the
 * workspace's retention (its WorkspaceObject's copy of the policy, protocol `keepFor`) and free
 * of credentials; a credential found is recorded as a `body_refused` gap on the run. A body
 * already in R2 is not written again. No D1 statement: one call to each object per upload, R2 per body.
 */
export async function takeBodies(env: Env, host: HostRow, runId: string, bodies: IntakeBody[]): Promise<UploadResult[]> {
  const chain = env.CHAINS.get(env.CHAINS.idFromName(runId));
  const [owned, retention] = await Promise.all([chain.ownedBy(host.id), workspaceObject(env, host.workspaceId).retention()]);
  if (!owned) throw notFound("run");
  const results = await Promise.all(
    bodies.map(async (b): Promise<UploadResult> => {
      const keep = keepFor(retention, b.role);
      if (keep === "digest_only")
        return { sha256: b.sha256, status: "not_retained", message: "The workspace keeps digests only: no body is stored." };
      if (keep === "retention")
        return { sha256: b.sha256, status: "not_retained", message: `The workspace does not keep ${b.role} bodies.` };
      const found = findCredentials(new TextDecoder().decode(b.bytes));
      if (found.length > 0) {
        const kinds = [...new Set(found.map((f) => f.kind))].sort();
        await chain.bodyRefused(b.sha256, b.role, kinds);
        return {
          sha256: b.sha256,
          status: "body_refused",
          message: `The body still holds a credential (${kinds.join(", ")}); it was refused and the run records the gap.`,
        };
      }
      const key = bodyKey(host.workspaceId, b.sha256);
      if ((await env.BODIES.head(key)) !== null) return { sha256: b.sha256, status: "duplicate" };
      await env.BODIES.put(key, b.bytes, { sha256: b.sha256, customMetadata: { role: b.role } });
      return { sha256: b.sha256, status: "stored" };
    }),
  );
  const received = results.filter((r) => r.status === "stored" || r.status === "duplicate").map((r) => r.sha256);
  if (received.length > 0) await chain.bodiesReceived(received, Date.now());
  return results;
}
