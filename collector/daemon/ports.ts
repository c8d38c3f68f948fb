import { emptyMcpStats, emptyStats, type Gateway, startGateway } from "../gateway/index.ts";
import type { BudgetLeases } from "../gateway/lease.ts";
import type { Listening } from "../lib/loopback.ts";
import type { HostConfig } from "../lib/state.ts";
import { listenHttp } from "../recorder/listener.ts";
import type { Recorder } from "../recorder/recorder.ts";
import type { RecorderStatus } from "./status.ts";

/** What the ports serve: the recorder, its HTTP hook handler, the enrollment's secret, the gateway's budget leases. */
export interface PortHandlers {
  recorder: Recorder;
  http(label: string, payload: unknown): unknown;
  secret(now?: boolean): string | null;
  leases: BudgetLeases;
}

/**
 * The recorder's two loopback TCP ports: HTTP hooks and the gateway. A stranger holding one keeps
 * that one out, not the recorder (its own socket still works): the port is tried again on a timer,
 * and `tacho status` says why it is not listening.
 */
export class Ports {
  http: Listening | null = null;
  gateway: Gateway | null = null;
  readonly gatewayStats = emptyStats();
  readonly mcpStats = emptyMcpStats();
  #httpError: string | null = null;
  #gatewayError: string | null = null;
  /** Both ports were tried once: until then "unavailable" means "not yet". */
  #bound = false;
  #handlers: PortHandlers | null = null;
  readonly #host: HostConfig;
  readonly #log: (msg: string) => void;
  readonly #started: number;

  constructor(host: HostConfig, log: (msg: string) => void, started: number) {
    this.#host = host;
    this.#log = log;
    this.#started = started;
  }

  /** What the socket's health request and GET /healthz report. */
  health(): Record<string, unknown> {
    const { http, gateway } = this;
    return {
      ok: true,
      v: 1,
      pid: process.pid,
      port: this.#host.ports.hooks,
      started_ms: this.#started,
      http: http ? "listening" : "unavailable",
      ...(this.#httpError && !http ? { http_error: this.#httpError } : {}),
      gateway_port: this.#host.ports.gateway,
      gateway: gateway ? "listening" : "unavailable",
      ...(this.#gatewayError && !gateway ? { gateway_error: this.#gatewayError } : {}),
      bound: this.#bound,
    };
  }

  /** Why the HTTP hook port could not be listened on; null when it listens (or was not tried yet). */
  httpDown(): string | null {
    return this.http ? null : this.#httpError;
  }

  /** Binds both ports, once. */
  async bind(handlers: PortHandlers): Promise<void> {
    this.#handlers = handlers;
    await this.#bindHttp();
    await this.#bindGateway();
    this.#bound = true;
  }

  /** Tries again each port that is not listening. */
  async retry(): Promise<void> {
    await Promise.all([this.#bindHttp(), this.#bindGateway()]);
  }

  async #bindHttp(): Promise<void> {
    const h = this.#handlers;
    if (this.http || !h) return;
    const port = this.#host.ports.hooks;
    try {
      this.http = await listenHttp(port, { http: h.http, secret: h.secret, health: () => this.health(), log: this.#log });
      this.#log(`HTTP hooks on 127.0.0.1:${port}`);
      this.#httpError = null;
    } catch (err) {
      const why = portError(err);
      if (this.#httpError !== why)
        this.#log(
          `HTTP hooks unavailable: cannot listen on 127.0.0.1:${port}: ${why}; Claude Code's tool results are not received until it can (retrying; tacho enroll --hooks-port N picks another)`,
        );
      this.#httpError = why;
    }
  }

  async #bindGateway(): Promise<void> {
    const h = this.#handlers;
    if (this.gateway || !h) return;
    const port = this.#host.ports.gateway;
    try {
      this.gateway = await startGateway(this.#host, h.recorder, h.secret, this.gatewayStats, h.leases, this.mcpStats);
      this.#gatewayError = null;
      this.#log(`model gateway on 127.0.0.1:${port}`);
    } catch (err) {
      const why = portError(err);
      if (this.#gatewayError !== why)
        this.#log(
          `model gateway unavailable: cannot listen on 127.0.0.1:${port}: ${why}; model calls pointed at it fail until it can (retrying; tacho enroll --gateway-port N picks another)`,
        );
      this.#gatewayError = why;
    }
  }

  /** What recorder-status.json says of the two ports. */
  status(): Pick<RecorderStatus, "http" | "gateway"> {
    const { http, gateway } = this;
    return {
      http: http
        ? this.#host.hook_secret
          ? "listening"
          : "listening without a hook secret (re-run tacho enroll)"
        : `port unavailable: ${this.#httpError ?? "not started"}`,
      gateway: {
        port: this.#host.ports.gateway,
        listening: gateway ? "listening" : `port unavailable: ${this.#gatewayError ?? "not started"}`,
        ...this.gatewayStats,
        mcp: this.mcpStats,
      },
    };
  }

  async close(): Promise<void> {
    await Promise.all([this.http?.close(), this.gateway?.listening.close()]);
  }
}

/** Why a port could not be listened on, in words. */
function portError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") return "another program (or another enrollment's recorder) is listening there";
  if (code === "EACCES") return "this user may not listen there";
  return (err as Error).message;
}
