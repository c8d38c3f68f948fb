import { Hono } from "hono";
import { ROUTES } from "../../protocol/index.ts";
import { authenticateHost } from "../auth/host.ts";
import { signedPolicy } from "../lib/policy-store.ts";
import type { AppEnv } from "../body.ts";

function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((v) => v.trim().replace(/^W\//, "").replaceAll('"', "") === etag);
}

/** A host's signed policy. A suspended host may still read it: that is how it learns it is suspended. */
export const policy = new Hono<AppEnv>().get(ROUTES.policy, async (c) => {
  const host = await authenticateHost(c);
  const { signed, etag } = await signedPolicy(c.env, host.workspaceId);
  c.header("ETag", `"${etag}"`);
  c.header("Cache-Control", "no-cache");
  if (matches(c.req.header("if-none-match"), etag)) return c.body(null, 304);
  return c.json(signed);
});
