// The recorder's loopback gateway (docs/collector.md, "The gateway"): one port, each side it
// carries behind the same admission (loopback only, this enrollment's secret), the same session tie
// (session.ts) and the same record path (sink.ts). Today the model APIs (model/); an MCP side
// would sit beside it as gateway/mcp/, routed here by its path.
import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { type Listening, listenLoopback } from "../lib/loopback.ts";
import type { HostConfig } from "../lib/state.ts";
import type { Recorder } from "../recorder/recorder.ts";
import { admitted } from "./http.ts";
import type { BudgetLeases } from "./lease.ts";
import { type GatewayTimeouts, gatewayTimeouts } from "./model/forward.ts";
import { emptyStats, type GatewayStats, modelSide } from "./model/handler.ts";
import { type ModelSink, recorderSink } from "./model/sink.ts";

export { emptyStats, type GatewayStats } from "./model/handler.ts";
export { recorderSink, upstreamOf, VENDOR_URLS } from "./model/sink.ts";

/** The gateway's request handler: admission, then the side the request is for. */
export function gatewayHandler(
  port: number,
  sink: ModelSink,
  stats: GatewayStats,
  timeouts: GatewayTimeouts = gatewayTimeouts(),
): (req: IncomingMessage, res: ServerResponse) => void {
  const model = modelSide(sink, stats, timeouts);
  return (req, res) => {
    const started = performance.now();
    const t = Date.now();
    const url = new URL(req.url ?? "/", "http://gateway");
    if (!admitted(req, res, port, sink.secret(), (message) => model.unauthorized(req, res, url, message))) return;
    model.handle(req, res, url, t, started);
  };
}

/** A listening gateway and what it has done. */
export interface Gateway {
  listening: Listening;
  stats: GatewayStats;
}

/** Starts the loopback gateway on the enrollment's gateway port. */
export async function startGateway(
  host: HostConfig,
  recorder: Recorder,
  secret: () => string | null,
  stats: GatewayStats = emptyStats(),
  leases?: BudgetLeases,
): Promise<Gateway> {
  const listening = await listenLoopback(
    host.ports.gateway,
    gatewayHandler(host.ports.gateway, recorderSink(recorder, secret, leases), stats),
  );
  return { listening, stats };
}
