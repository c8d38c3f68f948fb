// The recorder's loopback gateway (docs/collector.md, "The gateway"): one port, each side it
// carries behind the same admission (loopback only, this enrollment's secret), the same session tie
// (session.ts) and the same record path (sink.ts): the model APIs (model/) and, at /mcp, the
// workspace's Oxagen tools (mcp/).
import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { type Listening, listenLoopback } from "../lib/loopback.ts";
import type { HostConfig } from "../lib/state.ts";
import type { Recorder } from "../recorder/recorder.ts";
import { admitted, keyedUrl } from "./http.ts";
import type { BudgetLeases } from "./lease.ts";
import { MCP_PATH } from "../lib/loopback.ts";
import { mcpSide } from "./mcp/handler.ts";
import { emptyMcpStats, type McpStats } from "./mcp/rpc.ts";
import { type McpSink, recorderMcpSink } from "./mcp/sink.ts";
import { type GatewayTimeouts, gatewayTimeouts } from "./model/forward.ts";
import { emptyStats, type GatewayStats, modelSide } from "./model/handler.ts";
import { type ModelSink, recorderSink } from "./model/sink.ts";

export { emptyMcpStats, type McpStats } from "./mcp/rpc.ts";
export { emptyStats, type GatewayStats } from "./model/handler.ts";
export { recorderSink, upstreamOf, VENDOR_URLS } from "./model/sink.ts";

/** The gateway's request handler: admission, then the side the request is for. */
export function gatewayHandler(
  port: number,
  sink: ModelSink,
  stats: GatewayStats,
  timeouts: GatewayTimeouts = gatewayTimeouts(),
  tools?: { sink: McpSink; stats: McpStats },
): (req: IncomingMessage, res: ServerResponse) => void {
  const model = modelSide(sink, stats, timeouts);
  const mcp = tools ? mcpSide(tools.sink, tools.stats) : null;
  return (req, res) => {
    const started = performance.now();
    const t = Date.now();
    const url = keyedUrl(req, new URL(req.url ?? "/", "http://gateway"));
    if (mcp && url.pathname === MCP_PATH) {
      // No browser page may call the workspace's tools, not even one served from loopback.
      if (req.headers.origin !== undefined) {
        req.resume();
        mcp.refuse(res, 403, "the Oxagen gateway's MCP endpoint refuses requests from browser pages (an Origin header)");
        return;
      }
      if (!admitted(req, res, port, tools!.sink.secret, (message) => mcp.refuse(res, 401, message))) return;
      mcp.handle(req, res, t, started);
      return;
    }
    if (!admitted(req, res, port, sink.secret, (message) => model.unauthorized(req, res, url, message))) return;
    model.handle(req, res, url, t, started);
  };
}

/** A listening gateway and what it has done. */
export interface Gateway {
  listening: Listening;
  stats: GatewayStats;
  mcp: McpStats;
}

/** Starts the loopback gateway on the enrollment's gateway port. */
export async function startGateway(
  host: HostConfig,
  recorder: Recorder,
  secret: (now?: boolean) => string | null,
  stats: GatewayStats = emptyStats(),
  leases?: BudgetLeases,
  mcp: McpStats = emptyMcpStats(),
): Promise<Gateway> {
  const tools = { sink: recorderMcpSink(recorder, secret), stats: mcp };
  const listening = await listenLoopback(
    host.ports.gateway,
    gatewayHandler(host.ports.gateway, recorderSink(recorder, secret, leases), stats, gatewayTimeouts(), tools),
  );
  return { listening, stats, mcp };
}
