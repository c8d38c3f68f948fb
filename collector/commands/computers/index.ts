import { parse } from "../../lib/args.ts";
import { UsageError } from "../../lib/errors.ts";
import { EXIT, EXIT_HELP, operatorApi, printJson, table, when } from "../../lib/operator.ts";

export const USAGE = `usage: oxagen computers [--all] [--json]

The workspace's enrolled computers (GET /v1/hosts): name, host id, key id, status, when each
enrolled and was last seen.

  --all    also the removed (unenrolled) ones
  --json   print the API's answer

${EXIT_HELP}`;

interface Host {
  id: string;
  hostname: string;
  key_id: string;
  status: string;
  enrolled_ms: number;
  last_seen_ms: number | null;
}

export async function computers(args: string[]): Promise<number> {
  const { values, positionals } = parse("oxagen computers", args, {
    all: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError(`oxagen computers: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const answer = await operatorApi("oxagen computers").allPages<"hosts", { hosts: Host[] }>("/v1/hosts", "hosts");
  const hosts = answer.hosts.filter((h) => values.all || h.status !== "unenrolled");
  if (values.json) {
    printJson({ hosts });
    return EXIT.ok;
  }
  process.stdout.write(
    table(
      ["COMPUTER", "HOST ID", "KEY ID", "STATUS", "ENROLLED", "LAST SEEN"],
      hosts.map((h) => [h.hostname, h.id, h.key_id, h.status, when(h.enrolled_ms), when(h.last_seen_ms)]),
    ),
  );
  if (hosts.length === 0) process.stderr.write("no computer is enrolled yet: tacho enroll --server URL on the computer\n");
  return EXIT.ok;
}
