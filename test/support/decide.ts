import { answerOf } from "../../collector/harnesses/events.ts";
import { type DecideContext, decideEvent as decide, toldOf } from "../../collector/recorder/decide.ts";

/** The answer a harness speaking the canonical shape prints for one event, and the decision it records. */
export function decideEvent(event: Record<string, unknown>, run: string | null, ctx: DecideContext) {
  const record = decide(event, run, ctx);
  const told = toldOf(record);
  return { answer: answerOf(null, event, told.decision, told.reason), record };
}
