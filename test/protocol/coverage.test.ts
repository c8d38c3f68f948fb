import { describe, expect, it } from "vitest";
import { type CoverageFacts, coverageStatement, coverageText, emptyCoverage } from "../../protocol/index.ts";

const facts = (over: Partial<CoverageFacts>): CoverageFacts => ({ ...emptyCoverage(), ...over });

describe("a run's coverage statement", () => {
  it("a Cursor run: no model calls, spend not metered, and what its hooks leave out", () => {
    const s = coverageStatement({
      harness: "cursor",
      facts: facts({ frames: 3, by_path: { hook: 3 }, by_kind: { agent_start: 1, tool_call: 2 } }),
      gapCounts: {},
    });
    expect(s.harness_kind).toBe("cursor");
    expect(s.model_calls).toContain("Spend is not metered for this run.");
    expect(s.not_seen[0]).toContain("Cursor's model calls");
    expect(s.hooks).toContain("except the approval prompt and its own refusal");
    expect(s.holds.map((h) => [h.frame, h.count])).toEqual([
      ["agent_start", 1],
      ["tool_call", 2],
    ]);
    expect(s.paths).toEqual([{ path: "hook", frames: 3, what: "hooks the harness fired, received by the recorder" }]);
  });

  it("a run without gateway calls: spend is what the harness reported", () => {
    const s = coverageStatement({
      harness: "claude-code",
      facts: facts({ frames: 4, by_path: { hook: 2, transcript: 2 }, by_kind: { llm_call: 2 }, llm_calls_transcript: 2 }),
      gapCounts: {},
    });
    expect(s.model_calls).toContain("spend is what the harness reported");
    expect(s.not_seen).toContain("Model calls that did not pass the gateway are known only from what the harness's own log reported.");
  });

  it("a gateway run's spend is metered; a custom agent is named as one; gaps are counted and explained", () => {
    const g = coverageStatement({
      harness: "codex",
      facts: facts({ frames: 1, by_kind: { llm_call: 1 }, llm_calls_gateway: 1 }),
      gapCounts: {},
    });
    expect(g.model_calls).toContain("its spend is metered");
    const c = coverageStatement({
      harness: "stripe-refunds",
      facts: facts({ frames: 2, bodies_not_kept: 2 }),
      gapCounts: { daemon_down: 2, digest_only: 1, unobserved_tail: 1, missing_bodies: 1 },
    });
    expect(c.harness_kind).toBe("custom");
    expect(c.summary).toContain("custom agent stripe-refunds");
    expect(c.gaps).toEqual([
      { kind: "daemon_down", count: 2 },
      { kind: "digest_only", count: 1 },
      { kind: "unobserved_tail", count: 1 },
      { kind: "missing_bodies", count: 1 },
    ]);
    expect(c.not_seen).toContain("The content of bodies the computer kept that never reached the server.");
    expect(c.not_seen.join("\n")).not.toContain("harness's own log");
    expect(c.not_seen.join("\n")).toMatch(/2 bodies[\s\S]*digests only[\s\S]*recorder was down[\s\S]*no clean end/);
    const text = coverageText(c);
    expect(text).toContain("  daemon_down x2\n");
    expect(text.startsWith("Coverage statement\n")).toBe(true);
  });

  it("counts a path's frames in words: one frame, two frames", () => {
    const s = coverageStatement({ harness: "claude-code", facts: facts({ frames: 3, by_path: { worktree: 1, hook: 2 } }), gapCounts: {} });
    const text = coverageText(s);
    expect(text).toMatch(/ {2}worktree \(1 frame\): /);
    expect(text).toMatch(/ {2}hook \(2 frames\): /);
  });
});
