// Every answer a harness is given (test/support/answers.json, written from the answers of main
// before issue 22 moved the answer rules into the harness adapters): per harness, event, decision,
// what `tacho hook` adds offline (the tier, a notice), the fail-closed refusal, and the answer to an
// event that is not recorded. A change here is a change of what a harness is told. One change since:
// Stella's veto events are defined once (PreToolUse, PreIssueWork), so a PreIssueWork nothing decides
// gets no decision (`{}`, Stella's own flow) rather than an explicit allow.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { refusal } from "../../collector/harnesses/answers.cjs";
import { answerOf, type Decision, neutralAnswer, normalizeEvent } from "../../collector/harnesses/events.ts";

const EXPECTED = JSON.parse(readFileSync(new URL("../support/answers.json", import.meta.url), "utf8")) as Record<string, unknown>;

const EVENTS: Record<string, string[]> = {
  custom: [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
    "PreCompact",
    "Notification",
  ],
  codex: [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Stop",
    "Interrupt",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
  ],
  cursor: [
    "sessionStart",
    "beforeSubmitPrompt",
    "preToolUse",
    "postToolUse",
    "postToolUseFailure",
    "subagentStart",
    "subagentStop",
    "stop",
    "sessionEnd",
    "preCompact",
    "afterAgentResponse",
    "beforeShellExecution",
    "beforeMCPExecution",
    "beforeReadFile",
    "afterFileEdit",
  ],
  stella: ["SessionStart", "PreToolUse", "PostToolUse", "Stop", "PreCompact", "PreIssueWork", "PostIssueWork"],
};
EVENTS["claude-code"] = EVENTS.custom!;

const EXTRAS = { "": {}, tier: { tier: true }, "tier+notice": { tier: true, notice: "N" } } as const;

/** What a harness is told for one decision on one of its events. */
function answerTo(
  harness: string | null,
  payload: Record<string, unknown>,
  decision: Decision,
  extra: { tier?: boolean; notice?: string },
) {
  const n = normalizeEvent(harness, payload, { wrapped: [] });
  if (!("event" in n)) return neutralAnswer(harness, payload);
  return answerOf(harness, n.event, decision, "R", {
    ...(extra.tier ? { tier: "client_attested" as const } : {}),
    ...(extra.notice ? { notice: extra.notice } : {}),
  });
}

function everyAnswer(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [label, events] of Object.entries(EVENTS)) {
    const harness = label === "custom" ? null : label;
    for (const raw of events) {
      const payload =
        harness === "stella"
          ? { event: raw, cwd: "/w" }
          : { hook_event_name: raw, session_id: "s-1", ...(harness === "cursor" ? { conversation_id: "c-1" } : {}) };
      for (const decision of ["none", "allow", "deny", "ask"] as const) {
        for (const [name, extra] of Object.entries(EXTRAS))
          out[`${label} ${raw} ${decision} ${name}`.trim()] = answerTo(harness, payload, decision, extra);
      }
      out[`${label} ${raw} refusal`] = refusal(raw, "bad_payload", "M", harness);
    }
    out[`${label} (no event) refusal`] = refusal(null, "bad_payload", "M", harness);
  }
  return out;
}

describe("what each harness is told", () => {
  it("is, for every event, decision and offline addition, the answer it was given before the answer rules moved", () => {
    const got = everyAnswer();
    expect(Object.keys(got).sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const key of Object.keys(EXPECTED)) expect({ key, answer: got[key] }).toEqual({ key, answer: EXPECTED[key] });
  });
});
