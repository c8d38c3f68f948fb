import { formatUsd } from "../../../protocol/index.ts";
import { parse } from "../../lib/args.ts";
import { UsageError } from "../../lib/errors.ts";
import { EXIT, EXIT_HELP, operatorApi, printJson, table, when } from "../../lib/operator.ts";

export const USAGE = `usage: oxagen runs [--status S] [--tier T] [--grade G] [--host ID] [--agent NAME] [--from TIME] [--to TIME]
                   [--limit N] [--cursor C] [--json]

The workspace's runs, newest last frame first (GET /v1/runs): a table on a terminal, tab-separated
lines when piped, the API's answer with --json.

  --status S     live, ended, crashed, closed or sealed
  --tier T       contained, gateway, harness or observe
  --grade G      inspect, view, fork or retry
  --host ID      one computer's runs (oxagen computers lists them)
  --agent NAME   one harness's or custom agent's runs
  --from TIME    runs whose last frame is at or after TIME (an ISO date or time, or ms since the epoch)
  --to TIME      runs whose last frame is at or before TIME
  --limit N      at most N runs (1-200, default 50)
  --cursor C     the next page, as the previous page printed it
  --json         print the API's answer

${EXIT_HELP}`;

/** A time given on the command line, as milliseconds since the epoch. */
export function timeArg(flag: string, value: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms))
    throw new UsageError(`oxagen runs: ${flag} ${value} is not a time (an ISO date or time, or ms since the epoch)`);
  return ms;
}

interface RunRow {
  id: string;
  hostname: string | null;
  host_id: string;
  harness: string;
  status: string;
  outcome: { value: string; reason: string };
  tier: { value: string };
  grade: { value: string };
  spend_microusd: number;
  unpriced_calls: number;
  frame_count: number;
  last_frame_ms: number | null;
}

export async function runs(args: string[]): Promise<number> {
  const { values, positionals } = parse("oxagen runs", args, {
    status: { type: "string" },
    tier: { type: "string" },
    grade: { type: "string" },
    host: { type: "string" },
    agent: { type: "string" },
    from: { type: "string" },
    to: { type: "string" },
    limit: { type: "string" },
    cursor: { type: "string" },
    json: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError(`oxagen runs: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const query = new URLSearchParams();
  for (const key of ["status", "tier", "grade", "host", "agent", "limit", "cursor"] as const) {
    const v = values[key];
    if (v !== undefined) query.set(key, v);
  }
  if (values.from !== undefined) query.set("from", String(timeArg("--from", values.from)));
  if (values.to !== undefined) query.set("to", String(timeArg("--to", values.to)));
  const api = operatorApi("oxagen runs");
  const page = await api.json<{ runs: RunRow[]; next: string | null }>(`/v1/runs${query.size > 0 ? `?${query}` : ""}`);
  if (values.json) {
    printJson(page);
    return EXIT.ok;
  }
  process.stdout.write(
    table(
      ["RUN", "STATUS", "OUTCOME", "AGENT", "COMPUTER", "TIER", "GRADE", "SPEND", "FRAMES", "LAST FRAME"],
      page.runs.map((r) => [
        r.id,
        r.status,
        r.outcome.value,
        r.harness,
        r.hostname ?? r.host_id,
        r.tier.value,
        r.grade.value,
        `${formatUsd(r.spend_microusd)}${r.unpriced_calls > 0 ? ` +${r.unpriced_calls} unpriced` : ""}`,
        r.frame_count,
        when(r.last_frame_ms),
      ]),
    ),
  );
  if (page.runs.length === 0) process.stderr.write("no runs match\n");
  if (page.next) process.stderr.write(`more runs: the same command with --cursor ${page.next}\n`);
  return EXIT.ok;
}
