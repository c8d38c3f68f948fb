/**
 * Reading a version-1 bundle (one JSON document, see `bundle.ts`) into a {@link BundleCheck}. The
 * whole file is in memory: version 1 is what servers wrote before bundles were streamed, and its
 * size is capped at {@link MAX_BUNDLE_BYTES}.
 * @module
 */
import { bundleFrameProblem, type Manifest, ManifestHead, MAX_BUNDLE_BYTES } from "./bundle.ts";
import { bundleSignatureValid, bundleSigningInput, inExportedForm, splitBundle } from "./bundle-layout.ts";
import { fromUtf8 } from "./bytes.ts";
import { checkFrames } from "./frame-check.ts";
import type { BundleCheck } from "./verify-check.ts";

// Frames are checked this many at a time, so progress can be reported between.
const PROGRESS_STEP = 8192;

/** Feeds a version-1 bundle file (its bytes, or its text) to `check`. */
export function readV1(file: Uint8Array | string, check: BundleCheck, bodies: boolean, onProgress?: (done: number) => void): void {
  if (file.length > MAX_BUNDLE_BYTES) {
    check.unreadable("TOO_LARGE", `The bundle is over ${MAX_BUNDLE_BYTES / 1024 / 1024} MiB.`);
    return;
  }
  let text: string;
  try {
    text = typeof file === "string" ? file : fromUtf8(file);
  } catch {
    check.unreadable("UNREADABLE", "The bundle is not valid UTF-8.");
    return;
  }
  const split = splitBundle(text);
  if (!split.ok) {
    check.unreadable(split.code, `${split.message}.`);
    return;
  }
  // The manifest's bytes are a slice of the file (the layout around it is ASCII), so its
  // signature is checked without encoding a string that may be hundreds of megabytes again.
  const manifest = typeof file === "string" ? split.manifestText : file.subarray(split.start, file.length - split.suffixLength);
  check.signature(split.keyId, (key) => bundleSignatureValid(bundleSigningInput(manifest), split.sig, key));
  let raw: unknown;
  try {
    raw = JSON.parse(split.manifestText);
  } catch {
    check.invalid("manifest", "The manifest is not JSON.");
    return;
  }
  if (raw && typeof raw === "object" && "v" in raw && (raw as { v: unknown }).v !== 1) {
    const v = String((raw as { v: unknown }).v);
    check.invalid("manifest", `Manifest version ${v} is not one this verifier knows.`, "UNSUPPORTED_VERSION");
    return;
  }
  if (!inExportedForm(raw, split.manifestText)) {
    check.invalid("manifest", "The manifest is not in its exported form (duplicate member, white space or escaping changed).");
    return;
  }
  const parsed = ManifestHead.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? `${issue.path.join(".")}: ${issue.message}` : "invalid";
    check.invalid("manifest", `The manifest does not have the bundle's shape (${where}).`);
    return;
  }
  const m = parsed.data as Manifest;
  for (let i = 0; i < m.frames.length; i++) {
    const problem = bundleFrameProblem(m.frames[i]);
    if (problem) {
      check.invalid(`frame ${i}`, `The manifest's frame at position ${i} is malformed: ${problem}.`);
      return;
    }
  }
  check.head(m);
  for (const lock of m.locks) check.lock(lock);
  for (const index of check.locksDone().heads) if (index < m.frames.length) check.claimed(index, m.frames[index]!.hash);
  onProgress?.(0);
  const n = m.frames.length;
  for (let from = 0; from < n; from += PROGRESS_STEP) {
    const to = Math.min(n, from + PROGRESS_STEP);
    check.claimed(to - 1, m.frames[to - 1]!.hash);
    check.frames(checkFrames(m.run.id, m.frames, from, to, bodies));
    onProgress?.((0.9 * to) / n);
  }
  for (const e of m.equivocations) check.equivocation(e);
  for (const g of m.gaps) check.gap(g);
  check.end(m);
  onProgress?.(1);
}
