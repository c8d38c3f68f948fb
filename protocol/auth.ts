/**
 * Host request signatures: the one signing rule the collector and the server share. Every
 * collector call after enrollment is signed with the host key; no shared secret crosses the wire.
 *
 * Headers: `x-oxagen-host` (host id), `x-oxagen-time` (ms since the epoch, decimal),
 * `x-oxagen-nonce` (32 lowercase hex, fresh for every request, a retry included) and
 * `x-oxagen-signature` (128 hex): Ed25519 over
 * `PAE("application/vnd.oxagen.request.v2", CANONICAL)` where CANONICAL is these lines joined by
 * "\n" (no newline at the end):
 * ```
 * METHOD                       uppercase
 * ORIGIN                       scheme://host[:port] of the server as the collector calls it (WHATWG URL origin)
 * PATH_AND_QUERY               as sent, e.g. /v1/bodies/<sha>
 * TIME                         the x-oxagen-time value
 * NONCE                        the x-oxagen-nonce value
 * HOST                         the x-oxagen-host value
 * content-type:VALUE           for each name of SIGNED_HEADERS, in that order: the header's value
 * if-none-match:VALUE          with leading and trailing spaces and tabs removed, empty when
 * x-oxagen-role:VALUE          the header is absent
 * x-oxagen-run:VALUE
 * x-oxagen-agent:VALUE         only when the request carries the header (see OPTIONAL_SIGNED_HEADERS)
 * SHA256HEX(body)              of the exact body bytes (of nothing for a GET)
 * ```
 * The server accepts a time within {@link REQUEST_WINDOW_MS} of its own clock and each nonce once
 * per host, so a captured request cannot be replayed, to this server or another.
 * @module
 */
import { bytesToHex, fromHex, isHex, utf8 } from "./bytes.ts";
import { sign, verifyStrict } from "./ed25519.ts";
import { sha256Hex } from "./hash.ts";
import { pae } from "./lock.ts";

/** The DSSE payload type of a signed request. */
export const REQUEST_PAYLOAD_TYPE = "application/vnd.oxagen.request.v2";
/** How far a request's time may be from the server's clock. */
export const REQUEST_WINDOW_MS = 5 * 60 * 1000;
/** Header names, lowercase. */
export const AUTH_HEADERS = {
  host: "x-oxagen-host",
  time: "x-oxagen-time",
  nonce: "x-oxagen-nonce",
  signature: "x-oxagen-signature",
} as const;
/** The other headers a signature covers, in signing order: every header the server acts on. */
export const SIGNED_HEADERS = ["content-type", "if-none-match", "x-oxagen-role", "x-oxagen-run"] as const;
/**
 * Headers a signature covers only when the request carries them, a line each after
 * {@link SIGNED_HEADERS}, in this order: added after the first, so a request without them signs
 * exactly as before. Sending one and signing without it (or the reverse) does not verify.
 * `x-oxagen-agent` names the agent (the session's harness label) of a call on the workspace's
 * MCP endpoint.
 */
export const OPTIONAL_SIGNED_HEADERS = ["x-oxagen-agent"] as const;

/** A request as signed and as checked. */
export interface SignedRequest {
  /** The server's origin, `scheme://host[:port]`; any URL of it is reduced to its origin. */
  origin: string;
  method: string;
  pathAndQuery: string;
  hostId: string;
  time: number;
  nonce: string;
  /** Header values by lowercase name; only {@link SIGNED_HEADERS} and {@link OPTIONAL_SIGNED_HEADERS} are read (null or absent: not sent). */
  headers: Readonly<Record<string, string | null | undefined>>;
  body: Uint8Array;
}

/** The origin of a URL (lowercase scheme and host, default port dropped). */
export function originOf(url: string): string {
  return new URL(url).origin;
}

/** The bytes a request signature covers. */
export function requestSigningInput(r: SignedRequest): Uint8Array {
  const lines = [r.method.toUpperCase(), originOf(r.origin), r.pathAndQuery, String(r.time), r.nonce, r.hostId];
  const trim = (v: string) => v.replace(/^[ \t]+|[ \t]+$/g, "");
  for (const name of SIGNED_HEADERS) lines.push(`${name}:${trim(r.headers[name] ?? "")}`);
  for (const name of OPTIONAL_SIGNED_HEADERS) {
    const v = r.headers[name];
    if (v !== null && v !== undefined) lines.push(`${name}:${trim(v)}`);
  }
  lines.push(sha256Hex(r.body));
  return pae(REQUEST_PAYLOAD_TYPE, utf8(lines.join("\n")));
}

/** A fresh nonce: 16 random bytes from the platform's CSPRNG, as hex. */
export function newNonce(): string {
  return bytesToHex(crypto.getRandomValues(new Uint8Array(16)));
}

/**
 * The four auth headers for a request (`time` and `nonce` default to now and a fresh nonce). Send
 * them with exactly the signed headers' values and the body given here.
 */
export function signRequest(
  secretKey: Uint8Array,
  r: Omit<SignedRequest, "time" | "nonce"> & { time?: number; nonce?: string },
): Record<string, string> {
  const signed: SignedRequest = { ...r, time: r.time ?? Date.now(), nonce: r.nonce ?? newNonce() };
  const sig = sign(secretKey, requestSigningInput(signed));
  return {
    [AUTH_HEADERS.host]: signed.hostId,
    [AUTH_HEADERS.time]: String(signed.time),
    [AUTH_HEADERS.nonce]: signed.nonce,
    [AUTH_HEADERS.signature]: bytesToHex(sig),
  };
}

/** The auth headers of a received request, read as they came. */
export interface AuthHeaders {
  host: string | null;
  time: string | null;
  nonce: string | null;
  signature: string | null;
}

/**
 * What can be told about a request's auth headers before any key is looked up: why they are
 * unusable, or the time they carry. Says nothing about whether the host exists.
 */
export function authHeadersProblem(h: AuthHeaders, now: number): { problem: string } | { time: number } {
  if (!h.host || !h.time || !h.nonce || !h.signature) return { problem: "missing host signature headers" };
  if (!/^\d{1,16}$/.test(h.time)) return { problem: `${AUTH_HEADERS.time} is not a time in milliseconds` };
  const time = Number(h.time);
  if (Math.abs(now - time) > REQUEST_WINDOW_MS)
    return { problem: "request time is outside the allowed window; check the computer's clock" };
  if (!isHex(h.nonce, 16)) return { problem: `${AUTH_HEADERS.nonce} is not 32 lowercase hex characters` };
  if (!isHex(h.signature, 64)) return { problem: `${AUTH_HEADERS.signature} is not 128 lowercase hex characters` };
  return { time };
}

/**
 * Why a signed request is refused, or null when its headers, time and signature hold. The caller
 * still has to refuse a nonce it has seen from this host.
 */
export function requestProblem(
  publicKey: Uint8Array,
  h: AuthHeaders,
  r: Omit<SignedRequest, "hostId" | "time" | "nonce">,
  now: number,
): string | null {
  const read = authHeadersProblem(h, now);
  if ("problem" in read) return read.problem;
  const input = requestSigningInput({ ...r, hostId: h.host!, time: read.time, nonce: h.nonce! });
  return verifyStrict(publicKey, input, fromHex(h.signature!, 64)) ? null : "request signature does not verify";
}
