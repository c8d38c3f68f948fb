import { arch, hostname, release, type as osType, userInfo } from "node:os";
import { DeviceCode, type DeviceGrant, DeviceGrant as DeviceGrantSchema, type DevicePurpose, ROUTES } from "../../protocol/index.ts";
import { openBrowser } from "./browser.ts";
import { ExitError } from "./errors.ts";
import { refusal, requestJson } from "./http.ts";

/** What the console shows about this computer: its name, its user, its OS. */
export function thisComputer(): { hostname: string; user: string; os: string } {
  let user = process.env.USER || process.env.USERNAME || "unknown";
  try {
    user = userInfo().username || user;
  } catch {
    // No passwd entry for this uid (a container): the environment's name stands.
  }
  return { hostname: hostname() || "unknown", user, os: `${osType()} ${release()} ${arch()}` };
}

/** A device authorization as the command asks for it (protocol `DeviceStart`). */
export interface DeviceAsk {
  purpose: DevicePurpose;
  public_key?: string;
  harnesses?: string[];
  workspace?: string;
}

/** How the command shows the code: `print` never opens a browser; `keyId` is what the console's page must show too. */
export interface DeviceShow {
  program: string;
  print: boolean;
  keyId: string | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Signs in from the command line (protocol/device.ts): asks the server for a code, shows the code
 * and the console's address on stderr (stdout stays the command's result), opens the page in a
 * browser when this computer has one and `print` is not set, and polls every `interval` seconds
 * (5 more after each `slow_down`) until an operator approves or denies it, or it expires. A server
 * that does not answer a poll is polled again until the code's expiry. Returns what the approval
 * granted; anything else is an ExitError, and nothing was issued.
 */
export async function signInWithCode(base: URL, ask: DeviceAsk, show: DeviceShow): Promise<DeviceGrant> {
  const started = await requestJson(new URL(ROUTES.deviceAuthorize, base), { body: { ...ask, ...thisComputer() } });
  if (!started.ok) {
    const why = refusal(started);
    const wait = started.headers.get("retry-after");
    throw new ExitError(
      1,
      `${show.program}: the server refused a sign-in code (HTTP ${started.status}): ${why.message}${wait ? ` (try again in ${wait} s)` : ""}`,
    );
  }
  const code = DeviceCode.safeParse(started.body);
  if (!code.success) throw new ExitError(1, `${show.program}: the server's sign-in code is not one this collector understands`);
  const { user_code, verification_uri, verification_uri_complete, expires_in } = code.data;
  const opened = !show.print && (await openBrowser(verification_uri_complete));
  const what = ask.purpose === "enroll" ? "enroll this computer" : "sign in this command line";
  process.stderr.write(
    [
      `To ${what}, an operator approves this code in the Oxagen console, from any browser:`,
      `  ${verification_uri_complete}${opened ? "   (opened in your browser)" : ""}`,
      `  or open ${verification_uri} and type the code ${user_code}`,
      ...(show.keyId ? [`The page must show this computer's host key ${show.keyId}.`] : []),
      `The code expires in ${Math.round(expires_in / 60)} minutes. Waiting for the approval (Ctrl-C to stop; nothing is written until it is approved)…`,
      "",
    ].join("\n"),
  );
  const deadline = Date.now() + expires_in * 1000;
  let interval = code.data.interval;
  for (;;) {
    await sleep(interval * 1000);
    let answer: Awaited<ReturnType<typeof requestJson>>;
    try {
      answer = await requestJson(new URL(ROUTES.deviceToken, base), { body: { device_code: code.data.device_code }, timeoutMs: 15_000 });
    } catch (err) {
      // The server did not answer this poll: keep polling until the code would have expired.
      if (Date.now() > deadline)
        throw new ExitError(1, `${show.program}: ${(err as Error).message}; the code has expired. Nothing was written.`);
      continue;
    }
    if (answer.ok) {
      const grant = DeviceGrantSchema.safeParse(answer.body);
      if (!grant.success || grant.data.purpose !== ask.purpose)
        throw new ExitError(1, `${show.program}: the server's answer to the approved code is not one this collector understands`);
      return grant.data;
    }
    const why = refusal(answer);
    if (why.code === "authorization_pending") continue;
    if (why.code === "slow_down") {
      const told = (answer.body as { interval?: unknown } | null)?.interval;
      interval = typeof told === "number" && Number.isInteger(told) && told > interval ? told : interval + 5;
      continue;
    }
    if (answer.status >= 500 && Date.now() < deadline) continue;
    throw new ExitError(1, `${show.program}: ${why.message} [${why.code}] Nothing was written.`);
  }
}
