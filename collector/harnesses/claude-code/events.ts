import type { EventAdapter, Payload } from "../events-types.ts";
import { claudeAnswer } from "./answer.cjs";

/** Cursor runs Claude-format hooks from ~/.claude/settings.json with its own payload ("third-party hooks"). */
function isCursorPayload(p: Payload): boolean {
  return p.cursor_version !== undefined || p.conversation_id !== undefined || p.generation_id !== undefined;
}

/** Claude Code speaks the canonical shape already; a Claude-format hook Cursor runs is Cursor's to record. */
export const claudeEvents: EventAdapter = {
  ask: "ask",
  normalize(payload, ctx) {
    // Cursor's own hooks record this step; recording it here too would count it twice.
    if (ctx.wrapped.includes("cursor") && isCursorPayload(payload))
      return { ignore: "a Claude-format hook run by Cursor; Cursor's own hooks record this session" };
    return { event: payload };
  },
  answer: claudeAnswer,
};

/** A custom agent (`tacho hook --agent`): the canonical shape in, Claude Code's answers out (the spec's payload and answers). */
export const customEvents: EventAdapter = { ask: "ask", normalize: (payload) => ({ event: payload }), answer: claudeAnswer };
