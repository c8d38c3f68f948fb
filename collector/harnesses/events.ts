import { HookEvent } from "./canonical.ts";
import { claudeEvents, customEvents } from "./claude-code/events.ts";
import { codexEvents } from "./codex/events.ts";
import { cursorEvents } from "./cursor/events.ts";
import type { Decision, EventAdapter, HookAnswer, NormalizeContext, Normalized, Offline, Payload } from "./events-types.ts";
import { stellaEvents } from "./stella/events.ts";

export type { Decision, HookAnswer, NormalizeContext, Normalized, Offline, Payload } from "./events-types.ts";

const EVENT_ADAPTERS: Record<string, EventAdapter> = {
  "claude-code": claudeEvents,
  codex: codexEvents,
  cursor: cursorEvents,
  stella: stellaEvents,
};

/** The adapter of a harness; a custom agent's (null, or a name that is no harness) speaks the canonical shape. */
function adapterOf(harness: string | null): EventAdapter {
  return (harness ? EVENT_ADAPTERS[harness] : undefined) ?? customEvents;
}

/** The canonical (Claude-shaped) event the mapper reads ({@link HookEvent}), from a harness's own payload; or why the event is not recorded. */
export function normalizeEvent(harness: string | null, payload: Payload, ctx: NormalizeContext): Normalized {
  const n = adapterOf(harness).normalize(payload, ctx);
  return "event" in n ? { event: HookEvent.parse(n.event) } : n;
}

/** The harness's own answer to a decision on a canonical event. */
export function answerOf(harness: string | null, canonical: Payload, decision: Decision, reason: string, offline?: Offline): HookAnswer {
  return adapterOf(harness).answer(canonical, decision, reason, offline);
}

/** The answer for an event that is not recorded: no decision, in the harness's shape (an allow where one is required). */
export function neutralAnswer(harness: string | null, payload: Payload): HookAnswer {
  const name = payload.hook_event_name ?? payload.event;
  return answerOf(harness, { ...payload, hook_event_name: name, cursor_event: name }, "none", "");
}

/** What a policy's `ask` becomes for this harness. */
export function askBecomes(harness: string | null): "ask" | "deny" {
  return adapterOf(harness).ask;
}
