import { hostChainId } from "../../../protocol/index.ts";
import { Remembered } from "../../lib/remembered.ts";
import { hostUpstreams } from "../../lib/state.ts";
import { type CallIdentity, callKey, nextCarriedId } from "../../recorder/carried.ts";
import { decideModelCall, type ModelCall, type ModelVerdict } from "../../recorder/decide.ts";
import type { Recorder } from "../../recorder/recorder.ts";
import type { BudgetLeases, Held } from "../lease.ts";
import type { GatewaySession } from "../session.ts";
import { type GatewaySink, recordPath } from "../sink.ts";
import type { Api, ModelRequest, Vendor } from "./apis.ts";
import { maxCostOf, realCostOf } from "./cost.ts";
import { carriedStep } from "./offload.ts";
import type { Carried } from "./record.ts";
import type { Seen } from "./usage.ts";

/** What the model side needs besides the shared record path: the policy check, the budget, the call's record, where each vendor is. */
export interface ModelSink extends GatewaySink {
  /**
   * The budget: reserves the call's maximum cost before it is checked (waiting for the server only
   * when the run's slice cannot hold it); absent or null when nothing is reserved.
   */
  reserve?(call: ModelCall, api: Api, mr: ModelRequest): BudgetHold | Promise<BudgetHold> | null;
  /** The policy's check of a call, with its budget hold (refused when the hold has no room). */
  decide(call: ModelCall, hold?: BudgetHold | null): ModelVerdict;
  /**
   * Appends a forwarded call's `llm_call`: its bodies are redacted and hashed off the event loop
   * when large, its place and id (from its identity, for the usage logs to match) taken now
   * (docs/collector.md, "The gateway"); `onError` when it could not be recorded.
   */
  recordCall(session: GatewaySession | null, call: Carried, t: number, identity: CallIdentity | null, onError: (err: Error) => void): void;
  upstream(vendor: Vendor): URL;
}

/** A call's budget reservation (see collector/gateway/lease.ts): why it has none, and how it ends. */
export interface BudgetHold {
  /** The reason the budget has no room for the call; null when it is reserved (or let through). */
  refused: string | null;
  /** Whether the call holds a reservation the server's lease granted (false: let through unreserved, or refused). */
  reserved: boolean;
  /** Replaces the reservation with what the call cost (its usage; null when nothing was billed). */
  done(model: string, usage: Seen["usage"]): void;
}

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
  return parsed(own ?? recorder.policy?.policy.upstreams?.[vendor] ?? process.env[ENV[vendor]] ?? VENDOR_URLS[vendor]);
}

// Every call asks where its vendor is; the answer is one of a few URLs, parsed once each. Never
// changed by a caller (targetOf makes its own).
const urls = new Remembered<URL>(64);
const parsed = (href: string) => urls.get(href, () => new URL(href));

/**
 * The model side's view of the recorder: its policy, its chains, its one append path, and the budget
 * leases its calls reserve against (docs/collector.md, "Budget reservations").
 */
export function recorderSink(recorder: Recorder, secret: (now?: boolean) => string | null, leases?: BudgetLeases): ModelSink {
  // A call that holds a reservation was checked against the budget by the server's lease, which
  // counts the leases too: the pushed exhaustion (which a lease reaching the limit also sets) does
  // not refuse it again. A call let through unreserved (server unreachable) is still refused by it.
  const unexhausted = new WeakMap<object, typeof recorder.policy>();
  const ctx = (reserved: boolean) => {
    const p = recorder.policy;
    if (!reserved || !p) return { hostId: recorder.host.host_id, policy: p };
    // Made once per policy the recorder holds, not once per call.
    let view = unexhausted.get(p);
    if (!view) {
      view = { ...p, policy: { ...p.policy, exhausted_budgets: [] } };
      unexhausted.set(p, view);
    }
    return { hostId: recorder.host.host_id, policy: view };
  };
  return {
    ...recordPath(recorder, secret),
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
    recordCall: (session, call, t, identity, onError) => {
      const has = (id: string) => recorder.journal.has(id);
      const id = identity ? (chain: string) => nextCarriedId(has, callKey(chain, identity)) : null;
      recorder.recordGateway(session, carriedStep(call, recorder.policy?.policy.retention ?? null, onError), t, id);
    },
    upstream: (vendor) => upstreamOf(recorder, vendor),
  };
}
