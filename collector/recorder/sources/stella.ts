import type { Payload } from "../../../protocol/index.ts";
import { count, obj, parseObject, str } from "../../lib/json.ts";
import { timeOf } from "./lines.ts";

/** An llm_call from one Stella step_usage event. */
export interface StellaUsage {
  t: number;
  payload: Payload<"llm_call">;
}

/**
 * Stella session journal → llm_call, one per `step_usage` event (emitted once per committed step:
 * Stella's `AgentEvent::StepUsage`, crates/stella-protocol/src/event.rs). Pure. Unknown event types are skipped; `usage_incomplete` (a failed call)
 * has no usage to record.
 */
export class StellaJournal {
  bad = 0;

  line(text: string, now = Date.now()): StellaUsage[] {
    const o = parseObject(text);
    if (!o) {
      this.bad++;
      return [];
    }
    // Journal lines wrap the event; stream-json output is the bare event.
    const e = o.type === "event" ? obj(o.event) : o;
    if (e?.type !== "step_usage") return [];
    const input = count(e.input_tokens);
    const cached = count(e.cached_input_tokens);
    const usage: Payload<"llm_call">["usage"] = {
      input_tokens: Math.max(0, input - cached),
      output_tokens: count(e.output_tokens),
      cache_read_tokens: cached,
      cache_write_tokens: count(e.cache_write_tokens),
    };
    if (typeof e.reasoning_tokens === "number") usage.reasoning_tokens = count(e.reasoning_tokens);
    const duration = count(e.duration_ms);
    const payload: Payload<"llm_call"> = {
      path: "transcript",
      vendor: str(e.provider) ?? str(e.upstream_provider) ?? "unknown",
      model: str(e.model) ?? "unknown",
      forwarded: true,
      usage,
      ...(duration ? { latency_ms: duration } : {}),
      ...(typeof e.cost_usd === "number" && e.cost_usd >= 0 ? { cost_microusd: Math.round(e.cost_usd * 1e6) } : {}),
    };
    return [{ t: timeOf(o, timeOf(e, now)), payload }];
  }
}
