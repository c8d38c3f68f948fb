/**
 * Host request signatures. Every collector call after enrollment is signed with the host key;
 * no shared secret crosses the wire.
 *
 * Headers: `x-oxagen-host` (host id), `x-oxagen-time` (ms since the epoch, decimal) and
 * `x-oxagen-signature` (128 hex). The signature is Ed25519 over
 * `PAE("application/vnd.oxagen.request.v1", METHOD "\n" PATH_AND_QUERY "\n" TIME "\n" HOST "\n" SHA256HEX(body))`
 * where METHOD is uppercase and SHA256HEX is of the exact body bytes (of nothing for a GET).
 * The server accepts a time within {@link REQUEST_WINDOW_MS} of its own clock.
 * @module
 */
import { bytesToHex, fromHex, isHex, utf8 } from "./bytes.ts";
import { sign, verifyStrict } from "./ed25519.ts";
import { sha256Hex } from "./hash.ts";
import { pae } from "./lock.ts";

/** The DSSE payload type of a signed request. */
export const REQUEST_PAYLOAD_TYPE = "application/vnd.oxagen.request.v1";
/** How far a request's time may be from the server's clock. */
export const REQUEST_WINDOW_MS = 5 * 60 * 1000;
/** Header names, lowercase. */
export const AUTH_HEADERS = { host: "x-oxagen-host", time: "x-oxagen-time", signature: "x-oxagen-signature" } as const;

/** The bytes a request signature covers. */
export function requestSigningInput(method: string, pathAndQuery: string, time: number, hostId: string, body: Uint8Array): Uint8Array {
  const text = `${method.toUpperCase()}\n${pathAndQuery}\n${time}\n${hostId}\n${sha256Hex(body)}`;
  return pae(REQUEST_PAYLOAD_TYPE, utf8(text));
}

/** The three auth headers for a request. */
export function signRequest(
  secretKey: Uint8Array,
  hostId: string,
  method: string,
  pathAndQuery: string,
  body: Uint8Array,
  now: number,
): Record<string, string> {
  const sig = sign(secretKey, requestSigningInput(method, pathAndQuery, now, hostId, body));
  return { [AUTH_HEADERS.host]: hostId, [AUTH_HEADERS.time]: String(now), [AUTH_HEADERS.signature]: bytesToHex(sig) };
}

/** Why a signed request is refused, or null when its signature and time hold. */
export function requestProblem(
  publicKey: Uint8Array,
  headers: { host: string | null; time: string | null; signature: string | null },
  method: string,
  pathAndQuery: string,
  body: Uint8Array,
  now: number,
): string | null {
  if (!headers.host || !headers.time || !headers.signature) return "missing host signature headers";
  if (!/^\d{1,16}$/.test(headers.time)) return "x-oxagen-time is not a time in milliseconds";
  const time = Number(headers.time);
  if (Math.abs(now - time) > REQUEST_WINDOW_MS) return "request time is outside the allowed window; check the computer's clock";
  if (!isHex(headers.signature, 64)) return "x-oxagen-signature is not 128 lowercase hex characters";
  const ok = verifyStrict(publicKey, requestSigningInput(method, pathAndQuery, time, headers.host, body), fromHex(headers.signature, 64));
  return ok ? null : "request signature does not verify under the host's key";
}
