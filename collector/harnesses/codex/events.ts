import { compact, type EventAdapter, type Payload } from "../events-types.ts";
import { codexAnswer } from "./answer.cjs";

/**
 * Codex sends Claude's event names and field names already; its turn id stands in for the
 * prompt id. Its answers keep only the fields Codex accepts on that event (answer.cjs).
 */
export const codexEvents: EventAdapter = {
  ask: "deny",
  normalize(payload: Payload) {
    const event = compact({ ...payload, prompt_id: payload.prompt_id ?? payload.turn_id });
    // An interrupted turn fires Interrupt, never Stop: it ends the turn all the same.
    if (payload.hook_event_name === "Interrupt") return { event: { ...event, hook_event_name: "Stop", codex_event: "Interrupt" } };
    return { event };
  },
  answer: codexAnswer,
};
