import { bytesToHex, EnrollAnswer, keyIdFor, publicKeyOf, ROUTES } from "../../../protocol/index.ts";
import { signInWithCode, thisComputer } from "../../lib/device.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { refusal, requestJson } from "../../lib/http.ts";
import { otherOrigin } from "../../lib/server.ts";
import { type HostConfig, withHookSecret } from "../../lib/state.ts";
import { fetchPolicy } from "../../recorder/policy-cache.ts";

export function serverUrl(server: string): URL {
  try {
    return new URL(server);
  } catch {
    throw new UsageError(`--server ${server} is not a URL`);
  }
}

/**
 * Refuses a --server that is another name for the server (docs/operations.md, "The server's origin")
 * before a code is asked for or the token is sent: the host would sign every request for that name,
 * and the server refuses every one not signed for its own origin.
 */
export async function checkOrigin(program: string, base: URL, token: boolean): Promise<void> {
  const origin = await otherOrigin(base.origin);
  if (origin === null) return;
  throw new UsageError(
    `${program}: the server at ${base.origin} gives its origin as ${origin}, the URL computers must enroll with: it refuses every request signed for another. Run this again with --server ${origin}${token ? " (the token was not used)" : ""}. Nothing was written. [wrong_origin]`,
  );
}

/** Signs in (protocol/device.ts) for a one-time enrollment token bound to this computer's new key. */
export async function signIn(
  base: URL,
  secret: Uint8Array,
  harnesses: string[],
  workspace: string | undefined,
  show: { program: string; print: boolean },
): Promise<string> {
  const publicKey = publicKeyOf(secret);
  const grant = await signInWithCode(
    base,
    { purpose: "enroll", public_key: bytesToHex(publicKey), harnesses, ...(workspace ? { workspace } : {}) },
    { ...show, keyId: keyIdFor(publicKey) },
  );
  if (grant.purpose !== "enroll") throw new ExitError(1, `${show.program}: the approval is not an enrollment`);
  return grant.enrollment_token;
}

export async function register(
  base: URL,
  token: string,
  secret: Uint8Array,
  harnesses: string[],
  ports: HostConfig["ports"],
  workspace: string | undefined,
): Promise<HostConfig> {
  const publicKey = publicKeyOf(secret);
  const body = { token, public_key: bytesToHex(publicKey), hostname: thisComputer().hostname, harnesses };
  const answer = await requestJson(new URL(ROUTES.enroll, base), { body });
  if (!answer.ok) {
    const hint =
      answer.status === 401
        ? "\nAn enrollment token works once and expires: 60 minutes after it was made unless its maker chose another ttl_minutes (the one npm start prints lasts 24 hours). Make a new one on the console's Computers page, or with an operator token: POST /v1/enrollment-tokens (npm start prints a ready enroll line with one)."
        : "";
    throw new ExitError(1, `tacho enroll: enrollment refused (HTTP ${answer.status}): ${refusal(answer).message}${hint}`);
  }
  const parsed = EnrollAnswer.safeParse(answer.body);
  if (!parsed.success) throw new ExitError(1, `the server's enrollment answer is not one this collector understands`);
  if (workspace && parsed.data.workspace !== workspace) {
    throw new ExitError(1, `the token enrolls into workspace ${parsed.data.workspace}, not ${workspace}; nothing was written`);
  }
  return withHookSecret({
    v: 1,
    host_id: parsed.data.host_id,
    workspace: parsed.data.workspace,
    server: base.origin,
    server_key: parsed.data.server_key,
    secret_key: bytesToHex(secret),
    public_key: bytesToHex(publicKey),
    harnesses,
    ports,
    enrolled_ms: Date.now(),
  });
}

export async function cachePolicy(host: HostConfig): Promise<string> {
  try {
    const cached = await fetchPolicy(host, null, Date.now());
    return cached === "unchanged" ? "unchanged" : cached.etag;
  } catch (err) {
    process.stderr.write(
      `warning: the policy was not cached (${(err as Error).message}); until it is, tacho hook denies tool calls while the recorder is down\n`,
    );
    return "missing";
  }
}
