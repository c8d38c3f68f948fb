import { codexDecision, type HookAnswer } from "../../hook-fast/answers.cjs";
import { compact, toolDecision, type EventAdapter, type Payload } from "../events-types.ts";

// Events whose answer may carry Codex's common fields (harnesses.md §2.5).
const COMMON_FIELDS = new Set(["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "PostCompact", "SubagentStop"]);

function pick(answer: HookAnswer, keys: string[]): HookAnswer {
  const out: HookAnswer = {};
  for (const k of keys) if (answer[k] !== undefined) out[k] = answer[k];
  return out;
}

/**
 * Codex sends Claude's event names and field names already; its turn id stands in for the
 * prompt id. Its answers keep only the fields Codex accepts on that event: an extra field makes
 * Codex discard the whole answer and run the step unhooked.
 */
export const codexEvents: EventAdapter = {
  ask: "deny",
  normalize(payload: Payload) {
    const event = compact({ ...payload, prompt_id: payload.prompt_id ?? payload.turn_id });
    // An interrupted turn fires Interrupt, never Stop: it ends the turn all the same.
    if (payload.hook_event_name === "Interrupt") return { event: { ...event, hook_event_name: "Stop", codex_event: "Interrupt" } };
    return { event };
  },
  shapeAnswer(canonical: Payload, answer: HookAnswer): HookAnswer {
    // Interrupt's answer may hold systemMessage and nothing else.
    if (canonical.codex_event === "Interrupt") return pick(answer, ["systemMessage"]);
    const event = String(canonical.hook_event_name);
    const common = COMMON_FIELDS.has(event) ? pick(answer, ["continue", "stopReason", "systemMessage"]) : {};
    switch (event) {
      case "PreToolUse": {
        const { decision, reason } = toolDecision(answer);
        return codexDecision(event, decision, reason);
      }
      case "UserPromptSubmit":
        return { ...common, ...pick(answer, ["decision", "reason"]) };
      case "SessionStart": {
        const ctx = (answer.hookSpecificOutput as { additionalContext?: unknown } | undefined)?.additionalContext;
        return {
          ...common,
          ...(typeof ctx === "string" ? { hookSpecificOutput: { hookEventName: "SessionStart", additionalContext: ctx } } : {}),
        };
      }
      case "PermissionRequest":
        return pick(answer, ["hookSpecificOutput"]);
      default:
        // Stop needs JSON on stdout; `{}` is the silent answer everywhere else too.
        return common;
    }
  },
};
