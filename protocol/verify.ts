/**
 * Offline verification of an export bundle, of either layout. Pure: the caller reads files and
 * passes bytes (or a {@link BundleSource}) in. It goes on after the first problem and reports one
 * finding per problem, in the order of the phases of `verify-check.ts`.
 * @module
 */
import { bundleVersion } from "./bundle-layout.ts";
import { BundleCheck } from "./verify-check.ts";
import type { VerifyOptions, VerifyResult } from "./verify-findings.ts";
import { readV1 } from "./verify-bundle-v1.ts";
import { type BundleSource, bytesSource, type FrameChecker, localChecker, readV2 } from "./verify-bundle-v2.ts";
import { MAX_BUNDLE_BYTES } from "./bundle.ts";

export { BundleCheck, type BundleHeadParts, type LockSignatureJob } from "./verify-check.ts";
export { EXIT, type Finding, MAX_FINDINGS_PER_CODE, type Severity, type VerifyOptions, type VerifyResult } from "./verify-findings.ts";
export { type BundleSource, bytesSource, checkLockSignatures, type FrameChecker, localChecker, SLOT_BYTES } from "./verify-bundle-v2.ts";

/** What a valid bundle proves, and what it does not. */
export const STATEMENT = {
  proves: [
    "The frames are exactly the bytes the server received, in order, each linked to the one before it.",
    "Every frame up to the last lock was committed by the holder of the host key no later than that lock.",
    "The server, holding the pinned key, vouches that this is the whole run as it holds it, with the gaps it lists.",
    "Each body given with --bodies is the one its frame names.",
  ],
  doesNotProve: [
    "That what a frame or body says is true: the record is what the agent's computer reported.",
    "Anything the computer never reported, or anything after the chain ends.",
    "Accurate clocks on the agent's computer.",
  ],
} as const;

const START_BYTES = 200;

/** Verifies an export bundle held in memory (its file bytes, or its text). Never throws on bad input. */
export function verifyBundle(file: Uint8Array | string, options: VerifyOptions): VerifyResult {
  if (typeof file !== "string") return verifySource(bytesSource(file), options);
  const check = new BundleCheck(options);
  if (check.stopped) return check.finish();
  const version = bundleVersion(file.slice(0, START_BYTES));
  if (version.ok && version.version === 1) {
    readV1(file, check, options.body !== undefined, options.onProgress);
    return check.finish();
  }
  return verifySource(bytesSource(new TextEncoder().encode(file)), options);
}

/**
 * Verifies a bundle read from `source`: a version-2 bundle in one pass, its frame lines checked by
 * `checker` (here, by default); a version-1 bundle read whole (at most {@link MAX_BUNDLE_BYTES}).
 */
export function verifySource(
  source: BundleSource,
  options: VerifyOptions,
  checker: FrameChecker = localChecker(source.size),
): VerifyResult {
  const check = new BundleCheck(options);
  if (check.stopped) return check.finish();
  const bodies = options.body !== undefined;
  const start = new Uint8Array(Math.min(source.size, START_BYTES));
  source.read(start, 0, start.length, 0);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(start, { stream: true });
  } catch {
    check.unreadable("UNREADABLE", "The bundle is not valid UTF-8.");
    return check.finish();
  }
  const version = bundleVersion(text);
  if (!version.ok) check.unreadable(version.code, `${version.message}.`);
  else if (version.version === 2)
    readV2(source, check, checker, { bodies, ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
  else if (source.size > MAX_BUNDLE_BYTES) check.unreadable("TOO_LARGE", `The bundle is over ${MAX_BUNDLE_BYTES / 1024 / 1024} MiB.`);
  else {
    const bytes = new Uint8Array(source.size);
    const got = source.read(bytes, 0, bytes.length, 0);
    readV1(bytes.subarray(0, got), check, bodies, options.onProgress);
  }
  return check.finish();
}
