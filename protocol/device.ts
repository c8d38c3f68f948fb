/**
 * Signing in from a command line (the shape of RFC 8628, device authorization, in JSON): the
 * collector asks for a code, shows the short user code and the console's address, and polls; an
 * operator approves or denies the code in the console. An approved `enroll` code yields a one-time
 * enrollment token bound to the host key the computer sent, so the computer enrolls exactly as
 * with a token; an approved `login` code yields an operator token for `oxagen login`.
 * @module
 */
import { z } from "zod";
import { AgentName, Sha256Hex } from "./ids.ts";

/** What a device code is for: enrolling this computer (`tacho enroll`), or an operator's CLI (`oxagen login`). */
export const DevicePurpose = z.enum(["enroll", "login"]);
/** One of {@link DevicePurpose}. */
export type DevicePurpose = z.infer<typeof DevicePurpose>;

/**
 * `POST /v1/device/authorize`: what the console shows the operator who approves. `public_key` is
 * required for `enroll` (the token the approval yields enrolls only that key) and refused for
 * `login`; `workspace`, when given, is the only workspace the code can be approved into.
 */
export const DeviceStart = z
  .strictObject({
    purpose: DevicePurpose,
    public_key: Sha256Hex.optional(),
    hostname: z.string().min(1).max(255),
    user: z.string().min(1).max(128),
    os: z.string().min(1).max(128),
    harnesses: z.array(AgentName).max(32).default([]),
    workspace: z.string().min(1).max(64).optional(),
  })
  .refine((s) => (s.purpose === "enroll") === (s.public_key !== undefined), {
    message: "public_key is required to enroll and not taken to log in",
    path: ["public_key"],
  });
/** One of {@link DeviceStart}. */
export type DeviceStart = z.infer<typeof DeviceStart>;

/**
 * The answer to {@link DeviceStart}. `device_code` is the poller's secret (never shown);
 * `user_code` is what a person types or compares (`BCDF-GHJK`); `verification_uri_complete`
 * opens the console on the code. Poll `POST /v1/device/token` no faster than every `interval` seconds.
 */
export const DeviceCode = z.strictObject({
  device_code: z.string(),
  user_code: z.string().regex(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/),
  verification_uri: z.string().url(),
  verification_uri_complete: z.string().url(),
  expires_in: z.number().int().positive(),
  interval: z.number().int().positive(),
});
/** One of {@link DeviceCode}. */
export type DeviceCode = z.infer<typeof DeviceCode>;

/** `POST /v1/device/token`: one poll. */
export const DevicePoll = z.strictObject({ device_code: z.string().min(1).max(128) });

/**
 * The error codes of a poll (HTTP 400, with a `message`): keep polling on `authorization_pending`,
 * wait `interval` + 5 s more from now on after `slow_down`; the others end the flow and nothing was
 * issued (`invalid_grant`: an unknown code, or one already used).
 */
export const DEVICE_POLL_ERRORS = ["authorization_pending", "slow_down", "access_denied", "expired_token", "invalid_grant"] as const;

/** An approved `enroll` code's answer: a one-time enrollment token that enrolls only the key the code was asked with. */
export const DeviceEnrollGrant = z.strictObject({
  purpose: z.literal("enroll"),
  enrollment_token: z.string(),
  workspace: z.string(),
  expires_ms: z.number().int(),
});

/** An approved `login` code's answer: an operator token (shown once). */
export const DeviceLoginGrant = z.strictObject({
  purpose: z.literal("login"),
  operator_token: z.string(),
  token_id: z.string(),
  scope: z.enum(["admin", "read"]),
  workspace: z.string(),
  expires_ms: z.number().int(),
});

/** The answer to a poll once the code was approved. */
export const DeviceGrant = z.discriminatedUnion("purpose", [DeviceEnrollGrant, DeviceLoginGrant]);
/** One of {@link DeviceGrant}. */
export type DeviceGrant = z.infer<typeof DeviceGrant>;

/** The user code's alphabet: consonants only, no vowel to spell a word, none that reads as another (RFC 8628 §6.1). */
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";

/**
 * A user code as typed, normalized: letters only, upper case, the dash put back (`bcdf ghjk` →
 * `BCDF-GHJK`); null when it cannot be one.
 */
export function normalizeUserCode(typed: string): string | null {
  const letters = typed.toUpperCase().replace(/[^A-Z]/g, "");
  if (letters.length !== 8 || [...letters].some((ch) => !USER_CODE_ALPHABET.includes(ch))) return null;
  return `${letters.slice(0, 4)}-${letters.slice(4)}`;
}
