import { parse } from "../../lib/args.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { credentialsPath, EXIT, EXIT_HELP, OperatorApi, printJson, readCredentials, removeCredentials } from "../../lib/operator.ts";

export const USAGE = `usage: oxagen logout [--json]

Signs this command line out: deletes ~/.config/oxagen/operator.json. A token that oxagen login
minted (by a code approved in the console) is revoked on the server first; a token you pasted with
--token is yours and stays valid. A read-only token cannot revoke itself: it is deleted here, and
logout says until when it stays valid on the server.

  --json   print the result as JSON

${EXIT_HELP}`;

export async function logout(args: string[]): Promise<number> {
  const { values, positionals } = parse("oxagen logout", args, { json: { type: "boolean", default: false } });
  if (positionals.length > 0) throw new UsageError(`oxagen logout: unexpected ${positionals.join(" ")}\n${USAGE}`);
  const creds = readCredentials();
  if (!creds) {
    if (values.json) printJson({ signed_in: false, revoked: false });
    else process.stdout.write("not signed in; nothing to do\n");
    return EXIT.ok;
  }
  let revoked: "revoked" | "kept" | string = "kept";
  if (creds.minted) {
    try {
      await new OperatorApi(creds, "oxagen logout").json(`/v1/tokens/${creds.token_id}`, { method: "DELETE" });
      revoked = "revoked";
    } catch (err) {
      if (!(err instanceof ExitError)) throw err;
      // Signed out here either way: the file goes, and the message says what the server kept.
      revoked = err.exitCode === EXIT.signedOut ? "revoked" : err.message;
    }
  }
  removeCredentials();
  if (values.json) {
    printJson({
      signed_in: false,
      server: creds.server,
      token_id: creds.token_id,
      revoked: revoked === "revoked",
      problem: revoked === "revoked" || revoked === "kept" ? null : revoked,
    });
    return EXIT.ok;
  }
  const said =
    revoked === "revoked"
      ? `token ${creds.token_id} revoked on the server`
      : revoked === "kept"
        ? `token ${creds.token_id} is yours and stays valid (it was given with --token)`
        : `token ${creds.token_id} was not revoked (${revoked}); it stays valid until it expires or an admin revokes it`;
  process.stdout.write(`signed out of ${creds.server}: ${said}; deleted ${credentialsPath()}\n`);
  return EXIT.ok;
}
