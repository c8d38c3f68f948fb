import { hostChainId } from "../../protocol/index.ts";
import { type HostConfig, hostUpstreams } from "../lib/state.ts";
import { decideModelCall } from "../recorder/decide.ts";
import { type Listening, listenLoopback } from "../lib/loopback.ts";
import type { Recorder } from "../recorder/recorder.ts";
import type { Vendor } from "./apis.ts";
import { maxCostOf, realCostOf } from "./cost.ts";
import { carriedStep } from "./offload.ts";
import { callKey, nextCarriedId } from "../recorder/carried.ts";
import type { BudgetLeases, Held } from "./lease.ts";
import { type BudgetHold, emptyStats, gatewayHandler, type GatewaySink, type GatewayStats } from "./proxy.ts";

export { emptyStats, type GatewayStats } from "./proxy.ts";

/** Each vendor's own API, where the gateway forwards unless the workspace's policy names another. */
export const VENDOR_URLS: Record<Vendor, string> = { anthropic: "https://api.anthropic.com", openai: "https://api.openai.com" };

const ENV: Record<Vendor, string> = { anthropic: "OXAGEN_GATEWAY_ANTHROPIC_URL", openai: "OXAGEN_GATEWAY_OPENAI_URL" };

/**
 * Where a vendor's calls go: this computer's own upstream (host.json, set by enroll from the
 * developer's settings), else the workspace policy's `upstreams`, else the recorder's environment,
 * else the vendor's own.
 */
export function upstreamOf(recorder: Recorder, vendor: Vendor): URL {
  const own = hostUpstreams()?.[vendor]?.url;
  return new URL(own ?? recorder.policy?.policy.upstreams?.[vendor] ?? process.env[ENV[vendor]] ?? VENDOR_URLS[vendor]);
}

/**
 * The gateway's view of the recorder: its policy, its chains, its one append path, and the budget
 * leases its calls reserve against (docs/collector.md, "Budget reservations").
 */
export function recorderSink(recorder: Recorder, secret: () => string | null, leases?: BudgetLeases): GatewaySink {
  // A call that holds a reservation was checked against the budget by the server's lease, which
  // counts the leases too: the pushed exhaustion (which a lease reaching the limit also sets) does
  // not refuse it again. A call let through unreserved (server unreachable) is still refused by it.
  const ctx = (reserved: boolean) => {
    const p = recorder.policy;
    return { hostId: recorder.host.host_id, policy: reserved && p ? { ...p, policy: { ...p.policy, exhausted_budgets: [] } } : p };
  };
  return {
    secret,
    runId: (session) => recorder.gatewayRun(session),
    reserve: (call, api, mr) => {
      // Under a policy with budgets, a call of a model the price table knows (an unpriced call is
      // not counted by spend either). A call tied to no session is reserved like any other, on the
      // computer's own chain, where it is recorded and priced.
      if (!leases || !recorder.policy?.policy.budgets.length) return null;
      const run = call.runId ?? hostChainId(recorder.host.host_id);
      // A call the policy refuses anyway (a stop, a model not allowed) reserves nothing.
      if (!decideModelCall(call, ctx(true)).forward) return null;
      const max = maxCostOf(api, mr, new Date());
      if (max === null) return null;
      const held = leases.reserve(run, max);
      const hold = (h: Held): BudgetHold =>
        "refused" in h
          ? { refused: h.refused, reserved: false, done: () => {} }
          : {
              refused: null,
              reserved: h.microusd > 0,
              done: (model, usage) => leases.done(h, realCostOf(api.vendor, model, usage, new Date())),
            };
      return held instanceof Promise ? held.then(hold) : hold(held);
    },
    decide: (call, hold) => {
      const later = hold?.refused ? () => ({ reason: hold.refused as string, rule: "budget" }) : undefined;
      return decideModelCall(call, ctx(hold?.reserved === true), later);
    },
    // A refusal's or an answered call's frame: the client's answer does not wait on it, and a
    // journal that cannot take it must not throw inside the request handler (that would stop the recorder).
    record: (session, steps, t, id) => {
      try {
        recorder.recordGateway(session, steps, t, id);
      } catch (err) {
        recorder.log(`gateway: the ${steps[0]?.kind ?? "gateway"} frame of a call could not be recorded: ${(err as Error).message}`);
      }
    },
    recordCall: (session, call, t, identity, onError) => {
      const has = (id: string) => recorder.journal.has(id);
      const id = identity ? (chain: string) => nextCarriedId(has, callKey(chain, identity)) : null;
      recorder.recordGateway(session, carriedStep(call, recorder.policy?.policy.retention ?? null, onError), t, id);
    },
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
  leases?: BudgetLeases,
): Promise<Gateway> {
  const listening = await listenLoopback(
    host.ports.gateway,
    gatewayHandler(host.ports.gateway, recorderSink(recorder, secret, leases), stats),
  );
  return { listening, stats };
}
