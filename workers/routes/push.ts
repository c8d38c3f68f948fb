import { Hono } from "hono";
import { ROUTES } from "../../protocol/index.ts";
import { type HostEnv, hostAuth } from "../auth/host.ts";
import { AppError } from "../errors.ts";
import { hubOf } from "../lib/hubs.ts";
import { PUSH_HOST_HEADER } from "../push-hub-object.ts";

/**
 * Collector-facing: the push connection. A host-signed WebSocket upgrade, handed to the host's
 * hub (one of the workspace's, `lib/hubs.ts`), which sends the host's new policy ETag whenever it changes. The push is only
 * a hint: the recorder fetches and verifies the signed policy as it always does. A suspended host
 * is refused a new connection (403); one it holds stays, so it hears of its resumption at once.
 */
export const push = new Hono<HostEnv>().get(ROUTES.push, hostAuth(), async (c) => {
  const host = c.var.host;
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket")
    throw new AppError(426, "upgrade_required", "This route takes a WebSocket upgrade (Upgrade: websocket).");
  const headers = new Headers(c.req.raw.headers);
  headers.set(PUSH_HOST_HEADER, host.id);
  return hubOf(c.env, host.workspaceId, host.id).fetch(new Request(c.req.url, { headers }));
});
