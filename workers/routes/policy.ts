import { Hono } from "hono";
import { ROUTES } from "../../protocol/index.ts";
import { type HostEnv, hostAuth } from "../auth/host.ts";
import { hostPolicyPayload } from "../lib/host-policy.ts";

function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((v) => v.trim().replace(/^W\//, "").replaceAll('"', "") === etag);
}

/**
 * A host's own signed policy: the workspace's clauses and its own pause state, naming the host. A
 * suspended host may read it: that is how it learns it is suspended (and nothing else).
 */
export const policy = new Hono<HostEnv>().get(ROUTES.policy, hostAuth({ suspended: "allowed", policyPart: true }), async (c) => {
  const { etag, sign } = await hostPolicyPayload(c.env, c.var.host, Date.now(), c.var.hostPart);
  c.header("ETag", `"${etag}"`);
  c.header("Cache-Control", "no-cache");
  if (matches(c.req.header("if-none-match"), etag)) return c.body(null, 304);
  return c.json(await sign());
});
