import { formatUsd, plural } from "../../../protocol/index.ts";
import { parse } from "../../lib/args.ts";
import { EXIT, EXIT_HELP, operatorApi, printJson, runArg, when } from "../../lib/operator.ts";

export const USAGE = `usage: oxagen run RUN [--json]

One run (GET /v1/runs/RUN and its coverage statement): its status, outcome, enforcement tier and
replay grade with their reasons, its gaps, its spend by model, and the coverage statement (what its
record could see, and what no path sees).

  --json   print the run and its coverage statement as JSON ({ run, coverage })

${EXIT_HELP}`;

interface Detail {
  id: string;
  host_id: string;
  hostname: string | null;
  harness: string;
  session_id: string;
  status: string;
  outcome: { value: string; reason: string };
  tier: { value: string; reason: string };
  grade: { value: string; reason: string };
  spend: { microusd: number; unpriced_calls: number; by_model: { vendor: string; model: string; microusd: number; calls: number }[] };
  model_calls: number;
  model_calls_failed: number;
  frame_count: number;
  lock_count: number;
  gap_count: number;
  first_frame_ms: number | null;
  last_frame_ms: number | null;
  paused: boolean;
  gaps: { kind: string; seq?: number; detail: string }[];
}

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parse("oxagen run", args, { json: { type: "boolean", default: false } });
  const id = runArg("oxagen run", positionals, USAGE);
  const api = operatorApi("oxagen run");
  const [detail, coverage] = await Promise.all([
    api.json<Detail>(`/v1/runs/${id}`),
    api.json<{ statement: unknown; text: string }>(`/v1/runs/${id}/coverage`),
  ]);
  if (values.json) {
    printJson({ run: detail, coverage: coverage.statement });
    return EXIT.ok;
  }
  const d = detail;
  const lines = [
    `run ${d.id}: ${d.harness} on ${d.hostname ?? d.host_id} (${d.host_id}), session ${d.session_id}`,
    `status   ${d.status}${d.paused ? " (paused by an operator)" : ""}`,
    `outcome  ${d.outcome.value}: ${d.outcome.reason}`,
    `tier     ${d.tier.value}: ${d.tier.reason}`,
    `grade    ${d.grade.value}: ${d.grade.reason}`,
    `spend    ${formatUsd(d.spend.microusd)} over ${plural(d.model_calls, "model call")} (${d.model_calls_failed} failed)${d.spend.unpriced_calls > 0 ? `, and ${d.spend.unpriced_calls} calls the price table does not know (not counted, never $0)` : ""}`,
    ...d.spend.by_model.map((m) => `           ${formatUsd(m.microusd)}  ${m.vendor} ${m.model} (${m.calls} calls)`),
    `record   ${plural(d.frame_count, "frame")}, ${plural(d.lock_count, "lock")}, first ${when(d.first_frame_ms)}, last ${when(d.last_frame_ms)}`,
    `gaps     ${d.gaps.length === 0 ? "none" : d.gaps.length}`,
    ...d.gaps.map((g) => `  - ${g.kind}${g.seq !== undefined ? ` at seq ${g.seq}` : ""}: ${g.detail}`),
    "",
    coverage.text.trimEnd(),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  return EXIT.ok;
}
