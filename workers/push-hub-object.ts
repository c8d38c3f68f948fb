import { DurableObject } from "cloudflare:workers";
import { signPolicy } from "../protocol/index.ts";
import { migrate } from "./hub/schema.ts";
import { signingKey } from "./keys.ts";
import { metered } from "./lib/meter.ts";
import { type Announced, type Audience, type HostCopy, PushHub, type PushPart } from "./workspace/push-hub.ts";

/** The header the Worker names an authenticated host by when it hands a hub a push connection. */
export const PUSH_HOST_HEADER = "x-oxagen-push-host";
/** The header that carries the host's copy (`HostCopy`, JSON) with its push connection; none when it is too large for one. */
export const PUSH_COPY_HEADER = "x-oxagen-push-copy";

/**
 * One of a workspace's push hubs (`lib/hubs.ts`: a fixed number per workspace, a host always on
 * the same one): the recorders' WebSocket connections, the announcements sent over them and the
 * acknowledgements that come back. Spreading connections over hubs keeps a reconnect storm (every
 * recorder at once, after a deploy) and a workspace-wide announcement under one object's limits.
 * Connections use the WebSocket Hibernation API: an idle one keeps no object in memory, and the
 * ping a recorder sends is answered without waking it. The hub keeps a copy of each of its hosts'
 * status and own policy part (`HostCopy`), so a workspace-wide announcement carries each host its
 * signed policy without a call per host.
 */
export class PushHubObject extends DurableObject<Env> {
  readonly #hub: PushHub;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, metered(env, "PushHubObject"));
    void ctx.blockConcurrencyWhile(async () => migrate(ctx.storage));
    this.#hub = new PushHub(ctx, async (policy) => {
      const key = await signingKey(this.env);
      return signPolicy(policy, key.secret, key.keyId);
    });
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /** Accepts a push connection the Worker already authenticated (the host named in {@link PUSH_HOST_HEADER}). */
  override async fetch(request: Request): Promise<Response> {
    const host = request.headers.get(PUSH_HOST_HEADER);
    if (!host || request.headers.get("upgrade")?.toLowerCase() !== "websocket") return new Response(null, { status: 400 });
    const copy = request.headers.get(PUSH_COPY_HEADER);
    if (copy) this.#hub.hostCopy(host, JSON.parse(copy) as HostCopy);
    else this.#hub.forget(host);
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [host]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  // What a recorder sends besides the auto-answered ping: acknowledgements of announcements.
  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    this.#hub.message(ws, message);
  }

  override webSocketClose(ws: WebSocket, code: number): void {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, "closed");
    } catch {
      // Already closed.
    }
  }

  /**
   * Announces a policy change to the audience's connections on this hub and waits (at most
   * `waitMs`) until the recorder of every host it reached acknowledged it (see `workspace/push-hub.ts`).
   */
  announce(to: Audience, waitMs: number, change?: string, part?: PushPart): Promise<Announced> {
    return this.#hub.announce(to, waitMs, change, part);
  }

  /** Takes a host's status and own policy part from its HostObject (the newest version wins). */
  hostCopy(host: string, copy: HostCopy): void {
    this.#hub.hostCopy(host, copy);
  }

  /** The hosts with a push connection open on this hub now. */
  connectedHosts(): string[] {
    return this.#hub.connectedHosts();
  }

  /** Closes every push connection of a host (it was unenrolled). */
  disconnect(host: string): void {
    for (const ws of this.ctx.getWebSockets(host)) ws.close(1008, "unenrolled");
  }
}
