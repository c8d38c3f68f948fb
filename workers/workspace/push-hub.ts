/**
 * The push side of a workspace's object: its recorders' WebSocket connections (one tag, the host
 * id), the announcements sent over them, and the acknowledgements that come back.
 */

/** What a push connection receives: a change to fetch the policy for, with the host's new ETag or `*` (fetch to learn yours). */
export interface PolicyPush {
  type: "policy";
  etag: string;
  /** The announcement's id; the recorder names it in its acknowledgement. */
  change: string;
}

/** What a recorder sends once it fetched, verified and applied the policy an announcement named. */
export interface PushAck {
  type: "ack";
  change: string;
  /** The ETag of the policy the recorder now decides from. */
  etag?: string;
}

/** An announcement's outcome: the hosts it reached, and those that did not acknowledge it within the wait. */
export interface Announced {
  change: string;
  /** Hosts with a connection the announcement was sent on. */
  connected: string[];
  /** Of those, the hosts none of whose connections acknowledged it in time. */
  slow: string[];
}

/** Who an announcement is for: each named host with its new ETag, or every connection of the workspace. */
export type Audience = { host: string; etag: string }[] | "all";

/** The longest any announcement waits, whatever the caller asks (an RPC must not hang on a silent connection). */
const MAX_WAIT_MS = 30_000;

export class PushHub {
  readonly #ctx: DurableObjectState;
  /** Announcements being waited on: the hosts that have not acknowledged yet. */
  readonly #waiting = new Map<string, { left: Set<string>; done: () => void }>();

  constructor(ctx: DurableObjectState) {
    this.#ctx = ctx;
  }

  /**
   * Sends the announcement, then waits until every host it reached acknowledged it on one of its
   * connections, or `waitMs` passed. The object stays in memory while it waits (an RPC is in
   * flight), so the acknowledgements reach this instance's {@link ack}.
   */
  async announce(to: Audience, waitMs: number): Promise<Announced> {
    const change = `chg_${crypto.randomUUID().replaceAll("-", "")}`;
    const left = new Set<string>();
    const send = (ws: WebSocket, host: string, etag: string) => {
      try {
        ws.send(JSON.stringify({ type: "policy", etag, change } satisfies PolicyPush));
        left.add(host);
      } catch {
        // A connection closing as we send: its recorder reconnects and fetches on open.
      }
    };
    if (to === "all") {
      for (const ws of this.#ctx.getWebSockets()) {
        const host = this.#ctx.getTags(ws)[0];
        if (host) send(ws, host, "*");
      }
    } else {
      for (const { host, etag } of to) for (const ws of this.#ctx.getWebSockets(host)) send(ws, host, etag);
    }
    const connected = [...left];
    const wait = Math.min(Math.max(0, waitMs), MAX_WAIT_MS);
    if (left.size > 0 && wait > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => done(), wait);
        const done = () => {
          clearTimeout(timer);
          this.#waiting.delete(change);
          resolve();
        };
        this.#waiting.set(change, { left, done });
      });
    }
    return { change, connected, slow: [...left] };
  }

  /** Takes a message a recorder sent: an acknowledgement counts for the host its connection is tagged with. */
  message(ws: WebSocket, data: string | ArrayBuffer): void {
    if (typeof data !== "string" || data.length > 1024) return;
    let msg: Partial<PushAck>;
    try {
      msg = JSON.parse(data) as Partial<PushAck>;
    } catch {
      return;
    }
    if (msg?.type !== "ack" || typeof msg.change !== "string") return;
    const waiting = this.#waiting.get(msg.change);
    const host = this.#ctx.getTags(ws)[0];
    if (!waiting || !host) return;
    waiting.left.delete(host);
    if (waiting.left.size === 0) waiting.done();
  }

  /** The hosts with a push connection open now. */
  connectedHosts(): string[] {
    return [...new Set(this.#ctx.getWebSockets().flatMap((ws) => this.#ctx.getTags(ws)))];
  }
}
