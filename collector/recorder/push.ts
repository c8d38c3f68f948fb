import { ROUTES } from "../../protocol/index.ts";
import { hostAuth } from "../lib/server.ts";
import type { HostConfig } from "../lib/state.ts";

/** How the push connection behaves; every figure can be set for tests (OXAGEN_PUSH_* in daemon/wire.ts). */
export interface PushOptions {
  /** First reconnect delay; doubles per failed attempt up to `maxMs`, with jitter. */
  baseMs: number;
  maxMs: number;
  /** How often the policy is polled while the connection is down. */
  pollMs: number;
  /** How often a ping keeps an idle connection open through proxies (answered without waking the server's object). */
  pingMs: number;
  log: (line: string) => void;
}

/** What `recorder-status.json` says of the push connection. */
export interface PushStatus {
  state: "connecting" | "connected" | "down";
  /** Pushes received that named an ETag other than the cached policy's. */
  pushes: number;
  /** Of those, pushes whose carried signed policy was verified and applied without a fetch. */
  carried: number;
  /** Carried policies refused (a bad signature, another host's, an older one): each was followed by a fetch. */
  refused: number;
  /** Announcements acknowledged: the policy they named was fetched, verified and applied first. */
  acks: number;
  connects: number;
  last_error: string | null;
}

/**
 * The recorder's push connection: a host-signed WebSocket to the workspace's object. A push names
 * a change (and the new ETag, or `*`), and most often carries the host's signed policy: `apply`
 * verifies it exactly as a fetched one (the pinned key, this host, never older than the cached
 * one); without one, or when it is refused, `refresh` fetches and verifies the signed policy as a
 * poll does. Once the recorder decides from it the change is acknowledged on the same connection
 * (`{"type":"ack","change","etag"}`): the operator's call that made the change waits for that. A
 * fetch that fails is not acknowledged. While the connection is down it reconnects with backoff
 * and jitter, and `refresh` runs every `pollMs`.
 */
export class PolicyPush {
  readonly status: PushStatus = { state: "down", pushes: 0, carried: 0, refused: 0, acks: 0, connects: 0, last_error: null };
  #ws: WebSocket | null = null;
  #attempt = 0;
  #retry: NodeJS.Timeout | null = null;
  #poll: NodeJS.Timeout | null = null;
  #ping: NodeJS.Timeout | null = null;
  #stopped = false;

  readonly #host: HostConfig;
  readonly #etag: () => string | null;
  /** Fetches, verifies and applies the policy (a fetch that starts after the call); resolves to the ETag now applied. */
  readonly #refresh: () => Promise<string | null>;
  /** Verifies and applies a policy a push carried (throws with the reason it is refused); resolves to the ETag now applied. */
  readonly #apply: (signed: unknown) => Promise<string | null>;
  readonly #opts: PushOptions;

  constructor(
    host: HostConfig,
    etag: () => string | null,
    refresh: () => Promise<string | null>,
    apply: (signed: unknown) => Promise<string | null>,
    opts: PushOptions,
  ) {
    this.#host = host;
    this.#etag = etag;
    this.#refresh = refresh;
    this.#apply = apply;
    this.#opts = opts;
  }

  start(): void {
    this.#stopped = false;
    this.#polling(true);
    this.#connect();
  }

  stop(): void {
    this.#stopped = true;
    for (const t of [this.#retry, this.#poll, this.#ping]) if (t) clearTimeout(t);
    this.#ws?.close(1000, "recorder stopping");
    this.#ws = null;
  }

  #polling(on: boolean): void {
    if (on && !this.#poll) {
      this.#poll = setInterval(() => void this.#refresh().catch(() => {}), this.#opts.pollMs);
      this.#poll.unref();
    } else if (!on && this.#poll) {
      clearInterval(this.#poll);
      this.#poll = null;
    }
  }

  #connect(): void {
    if (this.#stopped) return;
    this.status.state = "connecting";
    const url = new URL(ROUTES.push, this.#host.server);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    let ws: WebSocket;
    try {
      // Node's WebSocket (undici) sends extra handshake headers: the request is signed like any other.
      ws = new WebSocket(url, { headers: hostAuth(this.#host, "GET", ROUTES.push, {}) } as unknown as string[]);
    } catch (err) {
      this.#down((err as Error).message);
      return;
    }
    this.#ws = ws;
    ws.onopen = () => {
      this.#attempt = 0;
      this.status.state = "connected";
      this.status.connects++;
      this.status.last_error = null;
      this.#polling(false);
      this.#ping = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send("ping"), this.#opts.pingMs);
      this.#ping.unref();
      // Whatever changed while the connection was down was never pushed.
      void this.#refresh().catch(() => {});
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== "string" || ev.data === "pong") return;
      let msg: { type?: unknown; etag?: unknown; change?: unknown; policy?: unknown };
      try {
        msg = JSON.parse(ev.data) as typeof msg;
      } catch {
        return;
      }
      if (msg?.type !== "policy" || typeof msg.etag !== "string") return;
      const change = typeof msg.change === "string" ? msg.change : null;
      if (msg.etag !== "*" && msg.etag === this.#etag()) {
        this.#ack(ws, change, msg.etag);
        return;
      }
      this.status.pushes++;
      this.#take(msg.policy).then(
        (applied) => this.#ack(ws, change, applied),
        () => {
          // Not applied, so not acknowledged: the server names this computer as not there yet.
        },
      );
    };
    ws.onerror = () => {
      // onclose follows with the reason.
    };
    ws.onclose = (ev) => {
      if (this.#ws !== ws) return;
      this.#down(`closed (${ev.code}${ev.reason ? `: ${ev.reason}` : ""})`);
    };
  }

  // The carried policy when there is one and it holds; else (or when refused) a fetch.
  async #take(carried: unknown): Promise<string | null> {
    if (carried !== undefined) {
      try {
        const applied = await this.#apply(carried);
        this.status.carried++;
        return applied;
      } catch (err) {
        this.status.refused++;
        this.#opts.log(`pushed policy refused, fetching it: ${(err as Error).message}`);
      }
    }
    return this.#refresh();
  }

  #ack(ws: WebSocket, change: string | null, etag: string | null): void {
    if (change === null || ws.readyState !== WebSocket.OPEN) return;
    ws.send(JSON.stringify({ type: "ack", change, ...(etag ? { etag } : {}) }));
    this.status.acks++;
  }

  #down(why: string): void {
    this.#ws = null;
    if (this.#ping) clearInterval(this.#ping);
    this.#ping = null;
    if (this.#stopped) return;
    this.status.state = "down";
    this.status.last_error = why;
    this.#polling(true);
    const ceiling = Math.min(this.#opts.maxMs, this.#opts.baseMs * 2 ** Math.min(this.#attempt, 20));
    this.#attempt++;
    // Full jitter over the upper half: a fleet that lost the server at once does not come back at once.
    const delay = ceiling / 2 + Math.random() * (ceiling / 2);
    if (this.#attempt === 1 || this.#attempt % 10 === 0) this.#opts.log(`policy push down: ${why}; reconnecting`);
    this.#retry = setTimeout(() => this.#connect(), delay);
    this.#retry.unref();
  }
}
