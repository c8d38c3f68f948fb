import { Hono } from "hono";
import { ROUTES } from "../../protocol/index.ts";
import { type HostEnv, hostAuth } from "../auth/host.ts";
import { AppError } from "../errors.ts";
import { hubOf } from "../lib/hubs.ts";
import { PUSH_COPY_HEADER, PUSH_HOST_HEADER } from "../push-hub-object.ts";

/** The largest copy handed with a connection (headers are small); a larger one the hub is handed by the host's next change. */
const MAX_COPY_HEADER = 8 * 1024;

/**
 * Collector-facing: the push connection. A host-signed WebSocket upgrade, handed to the host's
 * hub (one of the workspace's, `lib/hubs.ts`) with the host's copy (`workspace/push-hub.ts`), which sends the host's new
 * policy (signed, verified by the recorder as a fetched one) or its ETag whenever it changes. A suspended host
 * is refused a new connection (403); one it holds stays, so it hears of its resumption at once.
 */
export const push = new Hono<HostEnv>().get(ROUTES.push, hostAuth({ copy: true }), async (c) => {
  const host = c.var.host;
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket")
    throw new AppError(426, "upgrade_required", "This route takes a WebSocket upgrade (Upgrade: websocket).");
  const headers = new Headers(c.req.raw.headers);
  headers.set(PUSH_HOST_HEADER, host.id);
  const copy = JSON.stringify(c.var.hostCopy ?? null);
  if (c.var.hostCopy && copy.length <= MAX_COPY_HEADER) headers.set(PUSH_COPY_HEADER, copy);
  else headers.delete(PUSH_COPY_HEADER);
  return hubOf(c.env, host.workspaceId, host.id).fetch(new Request(c.req.url, { headers }));
});
