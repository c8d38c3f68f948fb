import type { HookAnswer } from "../hook-fast/answers.cjs";
import { codexEvents } from "./codex/events.ts";
import { cursorEvents } from "./cursor/events.ts";
import type { EventAdapter, NormalizeContext, Normalized, Payload } from "./events-types.ts";
import { stellaEvents } from "./stella/events.ts";

export type { NormalizeContext, Normalized, Payload } from "./events-types.ts";

const EVENT_ADAPTERS: Record<string, EventAdapter> = { codex: codexEvents, cursor: cursorEvents, stella: stellaEvents };

/** Cursor runs Claude-format hooks from ~/.claude/settings.json with its own payload ("third-party hooks"). */
export function isCursorPayload(p: Payload): boolean {
  return p.cursor_version !== undefined || p.conversation_id !== undefined || p.generation_id !== undefined;
}

/**
 * The canonical (Claude-shaped) event the mapper reads, from a harness's own payload; or why the
 * event is not recorded. Claude Code and custom agents already speak the canonical shape.
 */
export function normalizeEvent(harness: string | null, payload: Payload, ctx: NormalizeContext): Normalized {
  const adapter = harness ? EVENT_ADAPTERS[harness] : undefined;
  if (adapter) return adapter.normalize(payload, ctx);
  if (harness === "claude-code" && ctx.wrapped.includes("cursor") && isCursorPayload(payload)) {
    // Cursor's own hooks record this step; recording it here too would count it twice.
    return { ignore: "a Claude-format hook run by Cursor; Cursor's own hooks record this session" };
  }
  return { event: payload };
}

/** The harness's own answer for the mapper's canonical answer. */
export function shapeAnswer(harness: string | null, canonical: Payload, answer: HookAnswer): HookAnswer {
  const adapter = harness ? EVENT_ADAPTERS[harness] : undefined;
  return adapter ? adapter.shapeAnswer(canonical, answer) : answer;
}

/** The answer for an event that is not recorded: no decision, in the harness's shape (an allow where one is required). */
export function neutralAnswer(harness: string | null, payload: Payload): HookAnswer {
  const name = payload.hook_event_name ?? payload.event;
  return shapeAnswer(harness, { ...payload, hook_event_name: name, cursor_event: name }, {});
}

/** What a policy's `ask` becomes for this harness. */
export function askBecomes(harness: string | null): "ask" | "deny" {
  return (harness ? EVENT_ADAPTERS[harness]?.ask : undefined) ?? "ask";
}
