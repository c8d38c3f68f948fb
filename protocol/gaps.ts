/**
 * Gaps: what a run's record knows it missed. Some gaps show in the chain itself (a computer's
 * `telemetry_gap` frame, a body the frame says was not kept, a run with no clean end); the rest
 * only the server can see (a hole in the seqs, a lock that does not match, a refused body,
 * frames after a seal, equivocation). The computer can add a gap; nothing removes one.
 * @module
 */
import { z } from "zod";
import { type ParsedPayload, type PayloadTally, tallyPayloads } from "./frame-check.ts";
import { PAYLOADS } from "./frames.ts";
import { Sha256Hex } from "./ids.ts";

/** Gap kinds the server derives. */
export const SERVER_GAP_KINDS = [
  "broken_chain",
  "missing_frames",
  "unobserved_tail",
  "missing_bodies",
  "digest_only",
  "body_refused",
  "frames_after_seal",
  "equivocation",
] as const;

/** Causes a computer reports in a `telemetry_gap` frame (the frame schema's own list). */
export const COMPUTER_GAP_CAUSES = PAYLOADS.telemetry_gap.shape.cause.options;

/** Every gap kind. */
export const GapKind = z.enum([...new Set([...SERVER_GAP_KINDS, ...COMPUTER_GAP_CAUSES])] as [string, ...string[]]);

/**
 * A gap. `source` says who saw it: `chain` (derivable from the frames, so a verifier re-derives
 * it), `computer` (a `telemetry_gap` frame at `seq`), or `server` (only the server could see it;
 * the server's signature vouches for it).
 */
export const Gap = z.strictObject({
  kind: GapKind,
  source: z.enum(["chain", "computer", "server"]),
  seq: z.number().int().nonnegative().optional(),
  from_seq: z.number().int().nonnegative().optional(),
  to_seq: z.number().int().nonnegative().optional(),
  count: z.number().int().nonnegative().optional(),
  bodies: z.array(Sha256Hex).optional(),
  detail: z.string().max(2048),
});
/** One of {@link Gap}. */
export type Gap = z.infer<typeof Gap>;

/**
 * The gaps a chain shows by itself, in a fixed order: each `telemetry_gap` frame (source
 * `computer`), then `unobserved_tail` when the chain has no `agent_stop` or ends as crashed,
 * `digest_only` when any body was not kept for that reason, and `missing_bodies` naming every
 * body not kept because it was over the limit.
 */
export function chainGaps(kinds: readonly string[], payloads: readonly (ParsedPayload | null)[]): Gap[] {
  return tallyGaps(tallyPayloads(kinds, payloads));
}

/** {@link chainGaps} from a chain's tally. */
export function tallyGaps(t: PayloadTally): Gap[] {
  const gaps: Gap[] = t.reported.map(({ seq, cause }) => ({
    kind: cause,
    source: "computer",
    seq,
    detail: `the computer reported ${cause.replaceAll("_", " ")}`,
  }));
  if (!t.stop || t.stop.crashed) {
    gaps.push({
      kind: "unobserved_tail",
      source: "chain",
      detail: t.stop
        ? "the session crashed; what happened after its last frame was not observed"
        : "the record has no agent_stop; what came after its last frame was not observed",
    });
  }
  if (t.digestOnly) {
    gaps.push({ kind: "digest_only", source: "chain", detail: "the workspace keeps digests only: no body was kept" });
  }
  const over = [...t.overLimit];
  if (over.length > 0) {
    gaps.push({ kind: "missing_bodies", source: "chain", bodies: over, detail: `${over.length} bodies over 1 MiB were not kept` });
  }
  return gaps;
}

/** A stable key for matching a listed gap against a derived one. */
export function gapKey(gap: Pick<Gap, "kind" | "source" | "seq">): string {
  return `${gap.source}:${gap.kind}:${gap.seq ?? ""}`;
}
