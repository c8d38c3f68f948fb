import { ROUTES, ServerKeySet, TOKEN_SHAPE } from "../../../protocol/index.ts";
import { parse } from "../../lib/args.ts";
import { signInWithCode } from "../../lib/device.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { refusal, requestJson } from "../../lib/http.ts";
import {
  type Credentials,
  credentialsPath,
  EXIT,
  EXIT_HELP,
  fingerprint,
  OperatorApi,
  printJson,
  readCredentials,
  when,
  writeCredentials,
} from "../../lib/operator.ts";

export const USAGE = `usage: oxagen login --server URL [--token TOKEN] [--print] [--json]

Signs this command line in to an Oxagen server for the operator commands (oxagen runs, run, export,
pause, resume, seal, agents, computers, tokens). Without --token it shows a short code and the
console's address (and opens it in a browser when this computer has one); an operator with an admin
token approves it in the console, from any browser, and chooses what the new token may do (read,
or read and change). With --token it checks and keeps an operator token you already hold.

It fetches the server's public keys (GET /v1/keys) and pins them, printing each key's fingerprint:
compare them with what your server's operator publishes. oxagen export --verify checks bundles
against these pinned keys, offline. The credentials go to ~/.config/oxagen/operator.json, mode 0600
(OXAGEN_OPERATOR_FILE names another file), apart from the computer's tacho state.

  --server URL    the Oxagen server (npm start prints it)
  --token TOKEN   an operator token (oxo_...) instead of a code approved in the console
  --print         only print the code and the address (never open a browser)
  --json          print the result as JSON

${EXIT_HELP}`;

interface Current {
  id: string;
  name: string;
  scope: "admin" | "read";
  workspace: string;
  expires_ms: number | null;
}

type PinnedKey = { key_id: string; fingerprint: string; not_before_ms: number; not_after_ms: number | null };

export async function login(args: string[]): Promise<number> {
  const { values, positionals } = parse("oxagen login", args, {
    server: { type: "string" },
    token: { type: "string" },
    print: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  if (positionals.length > 0) throw new UsageError(`oxagen login: unexpected ${positionals.join(" ")}\n${USAGE}`);
  if (!values.server) throw new UsageError(`oxagen login: --server is required\n${USAGE}`);
  let base: URL;
  try {
    base = new URL(values.server);
  } catch {
    throw new UsageError(`oxagen login: --server ${values.server} is not a URL`);
  }
  if (values.token !== undefined && TOKEN_SHAPE.exec(values.token)?.[1] !== "oxo")
    throw new UsageError("oxagen login: --token takes an operator token (oxo_, 16 hex characters, _ and 48 more); nothing was written");

  const keys = await serverKeys(base);
  const minted = values.token === undefined;
  const token = values.token ?? (await tokenByCode(base, values.print ?? false));
  const creds = await checkedCredentials({
    v: 1,
    server: base.origin,
    token,
    token_id: "",
    workspace: "",
    scope: "read",
    expires_ms: null,
    minted,
    keys,
    pinned_ms: Date.now(),
  });
  const previous = readCredentials();
  writeCredentials(creds);

  const pinned: PinnedKey[] = keys.map((k) => ({
    key_id: k.key_id,
    fingerprint: fingerprint(k.pub),
    not_before_ms: k.not_before_ms,
    not_after_ms: k.not_after_ms,
  }));
  const replaced = previous && (previous.server !== creds.server || previous.token_id !== creds.token_id) ? previous : null;
  if (values.json) {
    printJson({
      server: creds.server,
      workspace: creds.workspace,
      token_id: creds.token_id,
      scope: creds.scope,
      expires_ms: creds.expires_ms,
      minted,
      keys: pinned,
      credentials: credentialsPath(),
      replaced: replaced ? { server: replaced.server, token_id: replaced.token_id } : null,
    });
  } else process.stdout.write(`${signedInLines(creds, pinned, replaced).join("\n")}\n`);
  return EXIT.ok;
}

/** The server's public keys (GET /v1/keys), to pin. */
async function serverKeys(base: URL): Promise<Credentials["keys"]> {
  const answer = await requestJson(new URL(ROUTES.keys, base), {}, EXIT.unreachable);
  const keys = ServerKeySet.safeParse(answer.body);
  if (!answer.ok || !keys.success || keys.data.keys.length === 0)
    throw new ExitError(EXIT.refused, `oxagen login: ${base.origin} did not answer its keys (GET /v1/keys: ${refusal(answer).message})`);
  return keys.data.keys;
}

/** A new operator token, by a code an admin approves in the console. */
async function tokenByCode(base: URL, print: boolean): Promise<string> {
  const grant = await signInWithCode(base, { purpose: "login" }, { program: "oxagen login", print, keyId: null });
  if (grant.purpose !== "login") throw new ExitError(EXIT.refused, "oxagen login: the approval is not a sign-in");
  return grant.operator_token;
}

/** The credentials with what the server says of their token (GET /v1/tokens/current). */
async function checkedCredentials(probe: Credentials): Promise<Credentials> {
  const current = await new OperatorApi(probe, "oxagen login").json<Current>("/v1/tokens/current").catch((err: unknown) => {
    if (err instanceof ExitError && err.exitCode === EXIT.signedOut)
      throw new ExitError(EXIT.signedOut, `oxagen login: ${probe.server} refused the token; nothing was written`);
    throw err;
  });
  return { ...probe, token_id: current.id, workspace: current.workspace, scope: current.scope, expires_ms: current.expires_ms };
}

function signedInLines(creds: Credentials, pinned: PinnedKey[], replaced: Credentials | null): string[] {
  const lines = [
    `signed in to ${creds.server}: workspace ${creds.workspace}, token ${creds.token_id} (${creds.scope === "admin" ? "read and change" : "read only"}), ${creds.expires_ms === null ? "no expiry" : `expires ${when(creds.expires_ms)}`}`,
    `pinned the server's ${pinned.length === 1 ? "key" : `${pinned.length} keys`} (compare with what your server's operator publishes):`,
    ...pinned.map(
      (k) =>
        `  ${k.key_id}  ed25519  ${k.fingerprint}  ${k.not_before_ms === 0 ? "its first signing key" : `signing from ${when(k.not_before_ms)}`}${k.not_after_ms === null ? " (current)" : ` to ${when(k.not_after_ms)}`}`,
    ),
    `credentials: ${credentialsPath()} (mode 0600)`,
  ];
  if (replaced)
    lines.push(
      `replaced the sign-in to ${replaced.server} (token ${replaced.token_id})${replaced.minted ? "; that token stays valid until it expires or an admin revokes it (oxagen tokens lists it)" : ""}`,
    );
  return lines;
}
