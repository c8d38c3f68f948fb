import type { HostConfig } from "../lib/state.ts";
import { decideModelCall, type LaterCheck } from "../recorder/decide.ts";
import { type Listening, listenLoopback } from "../recorder/listener.ts";
import type { Recorder } from "../recorder/recorder.ts";
import type { Vendor } from "./apis.ts";
import { emptyStats, gatewayHandler, type GatewaySink, type GatewayStats } from "./proxy.ts";

export { emptyStats, type GatewayStats } from "./proxy.ts";

/** Each vendor's own API, where the gateway forwards unless the workspace's policy names another. */
export const VENDOR_URLS: Record<Vendor, string> = { anthropic: "https://api.anthropic.com", openai: "https://api.openai.com" };

const ENV: Record<Vendor, string> = { anthropic: "OXAGEN_GATEWAY_ANTHROPIC_URL", openai: "OXAGEN_GATEWAY_OPENAI_URL" };

/** Where a vendor's calls go: the workspace policy's `upstreams`, else the recorder's environment, else the vendor's own. */
export function upstreamOf(recorder: Recorder, vendor: Vendor): URL {
  return new URL(recorder.policy?.policy.upstreams?.[vendor] ?? process.env[ENV[vendor]] ?? VENDOR_URLS[vendor]);
}

/** The gateway's view of the recorder: its policy, its chains, its one append path. */
export function recorderSink(recorder: Recorder, secret: () => string | null, later?: LaterCheck): GatewaySink {
  return {
    secret,
    runId: (session) => recorder.gatewayRun(session),
    decide: (call) => decideModelCall(call, { hostId: recorder.host.host_id, policy: recorder.policy }, later),
    record: (session, steps, t, id) => {
      recorder.recordGateway(session, steps, t, id);
    },
    retention: () => recorder.policy?.policy.retention ?? null,
    upstream: (vendor) => upstreamOf(recorder, vendor),
    log: (msg) => recorder.log(msg),
  };
}

/** A listening gateway and what it has done. */
export interface Gateway {
  listening: Listening;
  stats: GatewayStats;
}

/** Starts the loopback model gateway on the enrollment's gateway port (docs/collector.md, "The gateway"). */
export async function startGateway(
  host: HostConfig,
  recorder: Recorder,
  secret: () => string | null,
  stats: GatewayStats = emptyStats(),
): Promise<Gateway> {
  const listening = await listenLoopback(host.ports.gateway, gatewayHandler(host.ports.gateway, recorderSink(recorder, secret), stats));
  return { listening, stats };
}
