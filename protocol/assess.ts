/**
 * Enforcement tier and replay grade, derived from what the server observed: the frames that
 * exist, the gaps, the environment the run ran in and the workspace's policy mode. Never from a
 * field in which the computer claims a tier or a grade.
 * @module
 */
import { z } from "zod";
import { emptyTally, type ParsedPayload, type PayloadTally, tallyPayloads } from "./frame-check.ts";
import type { Gap } from "./gaps.ts";

/** Enforcement tiers, from most to least. */
export const TIERS = ["contained", "gateway", "harness", "observe"] as const;
/** Replay grades, from least to most. */
export const GRADES = ["inspect", "view", "fork", "retry"] as const;
/** One of {@link TIERS}. */
export type Tier = (typeof TIERS)[number];
/** One of {@link GRADES}. */
export type Grade = (typeof GRADES)[number];

/**
 * Where a run ran: `customer_computer` (a computer the customer controls, every run recorded by
 * the collector) or `contained` (an Oxagen-run sandbox). Only the server sets it.
 */
export const Environment = z.enum(["customer_computer", "contained"]);

/** The facts tier and grade are derived from, all counted from the chain. */
export const CoverageFacts = z.strictObject({
  frames: z.number().int().nonnegative(),
  by_path: z.record(z.string(), z.number().int().nonnegative()),
  by_kind: z.record(z.string(), z.number().int().nonnegative()),
  llm_calls_gateway: z.number().int().nonnegative(),
  llm_calls_transcript: z.number().int().nonnegative(),
  llm_calls_replayable: z.number().int().nonnegative(),
  enforced_hook_decisions: z.number().int().nonnegative(),
  bodies_named: z.number().int().nonnegative(),
  bodies_not_kept: z.number().int().nonnegative(),
  backfilled_frames: z.number().int().nonnegative(),
});
/** One of {@link CoverageFacts}. */
export type CoverageFacts = z.infer<typeof CoverageFacts>;

/** Counts the coverage facts of a chain from its kinds and parsed payloads. */
export function coverageFacts(kinds: readonly string[], payloads: readonly (ParsedPayload | null)[]): CoverageFacts {
  return tallyCoverage(tallyPayloads(kinds, payloads));
}

/** {@link coverageFacts} from a chain's tally. */
export function tallyCoverage(t: PayloadTally): CoverageFacts {
  return {
    frames: t.frames,
    by_path: sortKeys(t.byPath),
    by_kind: sortKeys(t.byKind),
    llm_calls_gateway: t.llmGateway,
    llm_calls_transcript: t.llmTranscript,
    llm_calls_replayable: t.llmReplayable,
    enforced_hook_decisions: t.enforcedHook,
    bodies_named: t.bodiesNamed,
    bodies_not_kept: t.bodiesNotKept,
    backfilled_frames: t.backfilled,
  };
}

/** The coverage facts of no frames. */
export function emptyCoverage(): CoverageFacts {
  return tallyCoverage(emptyTally());
}

/**
 * The coverage facts of two runs of frames, one after the other: every fact is a count, so each is
 * the sum. A holder that counts its chain batch by batch adds each batch's facts with this.
 */
export function addCoverage(a: CoverageFacts, b: CoverageFacts): CoverageFacts {
  const sum = (x: Record<string, number>, y: Record<string, number>) => {
    const out = { ...x };
    for (const [k, n] of Object.entries(y)) out[k] = (out[k] ?? 0) + n;
    return sortKeys(out);
  };
  return {
    frames: a.frames + b.frames,
    by_path: sum(a.by_path, b.by_path),
    by_kind: sum(a.by_kind, b.by_kind),
    llm_calls_gateway: a.llm_calls_gateway + b.llm_calls_gateway,
    llm_calls_transcript: a.llm_calls_transcript + b.llm_calls_transcript,
    llm_calls_replayable: a.llm_calls_replayable + b.llm_calls_replayable,
    enforced_hook_decisions: a.enforced_hook_decisions + b.enforced_hook_decisions,
    bodies_named: a.bodies_named + b.bodies_named,
    bodies_not_kept: a.bodies_not_kept + b.bodies_not_kept,
    backfilled_frames: a.backfilled_frames + b.backfilled_frames,
  };
}

/** A derived value with the sentence that explains it. */
export interface Derived<T> {
  value: T;
  reason: string;
}

/** What tier and grade are derived from (of the gaps, only their kinds and whether there are any count). */
export interface AssessInput {
  facts: CoverageFacts;
  gaps: readonly Pick<Gap, "kind">[];
  environment: z.infer<typeof Environment>;
  mode: "enforce" | "observe";
  /**
   * Whether one of the gateway's `llm_call` frames is under a lock of the computer. The server
   * tells it for a live chain; omitted, every frame is (a bundle ends in its final lock).
   */
  gatewayLocked?: boolean;
}

/** The enforcement tier: how much of the run Oxagen could enforce. */
export function enforcementTier({ facts, environment, mode, gatewayLocked = true }: AssessInput): Derived<Tier> {
  if (environment === "contained") return { value: "contained", reason: "the run ran in an Oxagen sandbox" };
  if (mode === "observe")
    return { value: "observe", reason: "the workspace's policy was in observe mode: activity was recorded, not enforced" };
  if (facts.llm_calls_gateway > 0 && gatewayLocked) {
    return { value: "gateway", reason: `the gateway carried ${facts.llm_calls_gateway} of the run's model calls` };
  }
  const unlocked = facts.llm_calls_gateway > 0 ? "; the gateway's model calls are not yet under a lock of the computer" : "";
  if (unlocked && facts.enforced_hook_decisions === 0)
    return { value: "observe", reason: `no hook asked Oxagen for a decision${unlocked}` };
  if (facts.enforced_hook_decisions > 0) {
    const n = facts.enforced_hook_decisions;
    const asked = `the harness's hooks asked Oxagen ${n === 1 ? "once" : `${n} times`}`;
    // A gateway call not yet locked did pass the gateway: the reason must not say none did.
    return { value: "harness", reason: `${asked}${unlocked || " and no model call passed the gateway"}` };
  }
  return { value: "observe", reason: "no model call passed the gateway and no hook asked Oxagen for a decision" };
}

/** The replay grade: how much of the run can be replayed. */
export function replayGrade({ facts, gaps, environment }: AssessInput): Derived<Grade> {
  if (gaps.length > 0) {
    const kinds = [...new Set(gaps.map((g) => g.kind))].join(", ");
    return { value: "inspect", reason: `the record has gaps (${kinds})` };
  }
  if (facts.bodies_not_kept > 0) return { value: "inspect", reason: `${facts.bodies_not_kept} bodies were not kept` };
  const llm = facts.by_kind.llm_call ?? 0;
  if (llm === 0) return { value: "view", reason: "every body is kept, but the record holds no model call to fork from" };
  if (facts.llm_calls_replayable < llm) {
    return {
      value: "view",
      reason: "every body is kept, but not every model call was carried by the gateway with its request and response",
    };
  }
  if (environment !== "contained") {
    return {
      value: "fork",
      reason: "every model exchange is kept; a run on a customer's computer cannot be reproduced, so it never reaches retry",
    };
  }
  return { value: "retry", reason: "every model exchange is kept and the run ran in an Oxagen sandbox" };
}

function sortKeys(record: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
