import { parse } from "../../lib/args.ts";
import { UsageError } from "../../lib/errors.ts";
import { EXIT, EXIT_HELP, operatorApi, printJson, table, when } from "../../lib/operator.ts";

export const USAGE = `usage: oxagen tokens [--enrollment] [--json]

The workspace's operator tokens (GET /v1/tokens): id, name, scope, who made each and when, its
expiry, last use and revocation; the one this command line holds is marked *. With --enrollment,
the one-time enrollment tokens instead (GET /v1/enrollment-tokens): made, expires, used by which
host, revoked. No token's secret is ever shown.

  --enrollment   the enrollment tokens
  --json         print the API's answer

${EXIT_HELP}`;

interface OperatorToken {
  id: string;
  name: string;
  scope: string;
  created_ms: number;
  expires_ms: number | null;
  last_used_ms: number | null;
  revoked_ms: number | null;
}
interface EnrollmentToken {
  id: string;
  created_ms: number;
  expires_ms: number;
  used_ms: number | null;
  used_by: string | null;
  revoked_ms: number | null;
}

export async function tokens(args: string[]): Promise<number> {
  const { values, positionals } = parse("oxagen tokens", args, {
    enrollment: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError(`oxagen tokens: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const api = operatorApi("oxagen tokens");
  if (values.enrollment) {
    const answer = await api.json<{ tokens: EnrollmentToken[] }>("/v1/enrollment-tokens");
    if (values.json) printJson(answer);
    else
      process.stdout.write(
        table(
          ["ID", "MADE", "EXPIRES", "USED", "BY HOST", "REVOKED"],
          answer.tokens.map((t) => [t.id, when(t.created_ms), when(t.expires_ms), when(t.used_ms), t.used_by, when(t.revoked_ms)]),
        ),
      );
    return EXIT.ok;
  }
  const answer = await api.json<{ tokens: OperatorToken[] }>("/v1/tokens");
  if (values.json) {
    printJson(answer);
    return EXIT.ok;
  }
  process.stdout.write(
    table(
      ["", "ID", "NAME", "SCOPE", "MADE", "EXPIRES", "LAST USED", "REVOKED"],
      answer.tokens.map((t) => [
        t.id === api.creds.token_id ? "*" : "",
        t.id,
        t.name,
        t.scope,
        when(t.created_ms),
        when(t.expires_ms),
        when(t.last_used_ms),
        when(t.revoked_ms),
      ]),
    ),
  );
  return EXIT.ok;
}
