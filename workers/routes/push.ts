import { Hono } from "hono";
import { ROUTES } from "../../protocol/index.ts";
import { type HostEnv, hostAuth } from "../auth/host.ts";
import { AppError } from "../errors.ts";
import { workspaceObject } from "../lib/policy-store.ts";
import { PUSH_HOST_HEADER } from "../workspace-object.ts";

/**
 * Collector-facing: the push connection. A host-signed WebSocket upgrade, handed to the
 * workspace's object, which sends the host's new policy ETag whenever it changes. The push is only
 * a hint: the recorder fetches and verifies the signed policy as it always does. A suspended host
 * is refused a new connection (403); one it holds stays, so it hears of its resumption at once.
 */
export const push = new Hono<HostEnv>().get(ROUTES.push, hostAuth(), async (c) => {
  const host = c.var.host;
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket")
    throw new AppError(426, "upgrade_required", "This route takes a WebSocket upgrade (Upgrade: websocket).");
  const headers = new Headers(c.req.raw.headers);
  headers.set(PUSH_HOST_HEADER, host.id);
  return workspaceObject(c.env, host.workspaceId).fetch(new Request(c.req.url, { headers }));
});
