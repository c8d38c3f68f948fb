import { type CoverageStatement, countGapKinds, coverageStatement, coverageText, emptyCoverage } from "../../protocol/index.ts";
import type { RunDetail } from "./runs.ts";

/** A run's coverage statement (protocol `coverageStatement`) and its text, as the API and the console give it. */
export function runCoverage(d: RunDetail): { run: string; statement: CoverageStatement; text: string } {
  const statement = coverageStatement({
    harness: d.row.harness,
    facts: d.facts ?? emptyCoverage(),
    gapCounts: countGapKinds(d.gaps),
  });
  return { run: d.row.id, statement, text: coverageText(statement) };
}
