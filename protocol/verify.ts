/**
 * Offline verification of an export bundle. Pure: the caller reads files and passes bytes in.
 * It goes on after the first problem and reports one finding per problem.
 * @module
 */
import { bytesToHex, fromHex, fromUtf8 } from "./bytes.ts";
import { enforcementTier, replayGrade, tallyCoverage } from "./assess.ts";
import {
  bundleFrameProblem,
  bundleSignatureValid,
  inExportedForm,
  type Manifest,
  ManifestHead,
  MAX_BUNDLE_BYTES,
  splitBundle,
  type SplitBundle,
} from "./bundle.ts";
import { chainProblems, genesisHash } from "./chain.ts";
import { publicKeyProblem } from "./ed25519.ts";
import { checkFrameSlice, completeSlices, type FrameSlice, mergeSlices } from "./frame-check.ts";
import { gapKey, tallyGaps } from "./gaps.ts";
import { sha256 } from "./hash.ts";
import { keyIdFor, runIdFor } from "./ids.ts";
import { type SignedLock, verifyLocks } from "./lock.ts";

/** How bad a finding is: `tamper` → exit 1, `unverifiable` → exit 2, `incomplete` → exit 3, `note` → no effect. */
export type Severity = "tamper" | "unverifiable" | "incomplete" | "note";

/** One problem (or note) found in a bundle. */
export interface Finding {
  code: string;
  severity: Severity;
  /** Where: `bundle`, `frame 12`, `lock 3`, `gap list`, `body <sha256>`. */
  where: string;
  message: string;
}

// Frames checked here are checked this many at a time, so progress can be reported between.
const PROGRESS_STEP = 8192;

/** Exit codes of `oxagen verify`. */
export const EXIT = { valid: 0, tampered: 1, unverifiable: 2, incomplete: 3 } as const;

/** What {@link verifyBundle} is given besides the bundle. */
export interface VerifyOptions {
  /** The pinned server public key (32 bytes). */
  serverKey: Uint8Array;
  /** Hex hash the last frame must have (anti-truncation, from an earlier look at the run). */
  expectHead?: string;
  /** Looks up a body by SHA-256: its bytes, or null when the caller has none. */
  body?: (sha256: string) => Uint8Array | null;
  /** Called now and then with the fraction done, for a progress bar. */
  onProgress?: (done: number) => void;
  /**
   * Shares the frames' checking, e.g. with another thread. Called once the manifest's head has
   * the bundle's shape (its frames are not checked yet), it may start work elsewhere at once;
   * the function it returns is called when this thread is ready to check frames, with `check`
   * (which checks frames `from` … `to − 1` here), and returns slices as `checkFrameSlice` makes
   * them, or null. Frames no slice covers are checked here; overlapping slices are not trusted.
   */
  shareFrames?: (manifest: Manifest) => (check: (from: number, to: number) => FrameSlice) => FrameSlice[] | null;
  /**
   * Supplies each lock's `lockSignatureValid` under the key of the signer its payload names (the
   * manifest's host key or the pinned server key), e.g. from another thread; returns null to have
   * them checked here. Its answer must equal what `verifyLocks` would compute.
   */
  lockSignatures?: (locks: readonly SignedLock[]) => boolean[] | null;
  /** Supplies whether the server's signature over the manifest holds, e.g. from another thread; null to check it here. */
  bundleSignature?: () => boolean | null;
}

/** The result of verifying a bundle. */
export interface VerifyResult {
  exit: 0 | 1 | 2 | 3;
  findings: Finding[];
  /** The first seq whose frame, link or lock does not hold, or null. */
  firstBrokenSeq: number | null;
  summary: {
    run: string | null;
    frames: number;
    locks: number;
    lockedFrames: number;
    finalLocked: boolean;
    gaps: number;
    head: string | null;
    tier: string | null;
    grade: string | null;
    bodiesChecked: number;
  };
}

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

function exitFor(findings: readonly Finding[]): 0 | 1 | 2 | 3 {
  if (findings.some((f) => f.severity === "tamper")) return EXIT.tampered;
  if (findings.some((f) => f.severity === "unverifiable")) return EXIT.unverifiable;
  if (findings.some((f) => f.severity === "incomplete")) return EXIT.incomplete;
  return EXIT.valid;
}

const emptySummary = (): VerifyResult["summary"] => ({
  run: null,
  frames: 0,
  locks: 0,
  lockedFrames: 0,
  finalLocked: false,
  gaps: 0,
  head: null,
  tier: null,
  grade: null,
  bodiesChecked: 0,
});

/** Verifies an export bundle (its file bytes). Never throws on bad input. */
export function verifyBundle(file: Uint8Array | string, options: VerifyOptions): VerifyResult {
  const findings: Finding[] = [];
  const add = (code: string, severity: Severity, where: string, message: string) => findings.push({ code, severity, where, message });
  const result = (firstBrokenSeq: number | null, summary = emptySummary()): VerifyResult => ({
    exit: exitFor(findings),
    findings,
    firstBrokenSeq,
    summary,
  });

  const keyProblem = options.serverKey.length === 32 ? publicKeyProblem(options.serverKey) : "the server key is not 32 bytes";
  if (keyProblem) {
    add("KEY_INVALID", "unverifiable", "server key", `The pinned server key cannot be used: ${keyProblem}.`);
    return result(null);
  }
  if (file.length > MAX_BUNDLE_BYTES) {
    add("TOO_LARGE", "unverifiable", "bundle", `The bundle is over ${MAX_BUNDLE_BYTES / 1024 / 1024} MiB.`);
    return result(null);
  }
  let text: string;
  try {
    text = typeof file === "string" ? file : fromUtf8(file);
  } catch {
    add("UNREADABLE", "unverifiable", "bundle", "The bundle is not valid UTF-8.");
    return result(null);
  }
  const split = splitBundle(text);
  if (!split.ok) {
    add(split.code, "unverifiable", "bundle", `${split.message}.`);
    return result(null);
  }
  // The server signature may be answered elsewhere (another thread), and the manifest's exported
  // form is checked once the frames' work is shared: both answers come late, and their findings
  // are put in the place and precedence they would have if checked first, before any result.
  const pinnedId = keyIdFor(options.serverKey);
  let signature: { at: number; valid: () => boolean } | null = null;
  if (split.keyId !== pinnedId) {
    add("SERVER_KEY_MISMATCH", "tamper", "bundle", `The bundle is signed by key ${split.keyId}, not by the pinned server key ${pinnedId}.`);
  } else {
    const valid = () => options.bundleSignature?.() ?? bundleSignatureValid(manifestBytes(file, split), split.sig, options.serverKey);
    signature = { at: findings.length, valid };
  }
  let form: { at: number; exported: () => boolean } | null = null;
  const done = (firstBrokenSeq: number | null, summary = emptySummary()): VerifyResult => {
    if (form && !form.exported()) {
      findings.length = form.at;
      add(
        "MANIFEST_INVALID",
        "unverifiable",
        "manifest",
        "The manifest is not in its exported form (duplicate member, white space or escaping changed).",
      );
      [firstBrokenSeq, summary] = [null, emptySummary()];
    }
    if (signature && !signature.valid()) {
      findings.splice(signature.at, 0, {
        code: "SERVER_SIG_INVALID",
        severity: "tamper",
        where: "bundle",
        message: "The server's signature does not match the bundle's contents.",
      });
    }
    signature = form = null;
    return result(firstBrokenSeq, summary);
  };
  let raw: unknown;
  try {
    raw = JSON.parse(split.manifestText);
  } catch {
    add("MANIFEST_INVALID", "unverifiable", "manifest", "The manifest is not JSON.");
    return done(null);
  }
  if (raw && typeof raw === "object" && "v" in raw && (raw as { v: unknown }).v !== 1) {
    add(
      "UNSUPPORTED_VERSION",
      "unverifiable",
      "manifest",
      `Manifest version ${String((raw as { v: unknown }).v)} is not one this verifier knows.`,
    );
    return done(null);
  }
  let exportedForm: boolean | undefined;
  form = { at: findings.length, exported: () => (exportedForm ??= inExportedForm(raw, split.manifestText)) };
  const parsed = ManifestHead.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    add(
      "MANIFEST_INVALID",
      "unverifiable",
      "manifest",
      `The manifest does not have the bundle's shape (${issue ? `${issue.path.join(".")}: ${issue.message}` : "invalid"}).`,
    );
    return done(null);
  }
  const m = parsed.data as Manifest;
  // Shared before the frames' own shape is checked, so the help starts sooner: a sharer checks
  // the types it relies on, and nothing it returns is used when a frame is malformed.
  const shared = options.shareFrames?.(m);
  for (let i = 0; i < m.frames.length; i++) {
    const problem = bundleFrameProblem(m.frames[i]);
    if (problem) {
      add("MANIFEST_INVALID", "unverifiable", `frame ${i}`, `The manifest's frame at position ${i} is malformed: ${problem}.`);
      return done(null);
    }
  }
  // Checked now, while the shared frames are being checked elsewhere.
  form.exported();
  const chainId = m.run.id;
  const summary = emptySummary();
  summary.run = chainId;
  summary.frames = m.frames.length;
  summary.locks = m.locks.length;
  summary.gaps = m.gaps.length;
  summary.tier = m.tier.value;
  summary.grade = m.grade.value;
  if (!sameRunId(m.run.host, m.run.harness, m.run.session_id, chainId)) {
    add("RUN_ID_MISMATCH", "tamper", "manifest", "The run id is not the one its host, harness and session id give.");
  }
  if (m.server_key_id !== split.keyId)
    add("SERVER_KEY_MISMATCH", "tamper", "manifest", "The manifest names a different server key than its signature.");
  const hostKey = fromHex(m.host_key.pub, 32);
  const hostKeyProblem = publicKeyProblem(hostKey);
  if (hostKeyProblem) add("HOST_KEY_INVALID", "tamper", "manifest", `The host key is unacceptable: ${hostKeyProblem}.`);
  if (keyIdFor(hostKey) !== m.host_key.key_id) add("HOST_KEY_INVALID", "tamper", "manifest", "The host key's id does not match the key.");

  let firstBroken: number | null = null;
  const broke = (seq: number) => {
    if (firstBroken === null || seq < firstBroken) firstBroken = seq;
  };

  options.onProgress?.(0);
  const n = m.frames.length;
  const check = (from: number, to: number) => {
    const slice = checkFrameSlice(chainId, m.frames, from, to);
    options.onProgress?.((0.8 * to) / Math.max(1, n));
    return slice;
  };
  const here = (from: number, to: number) => {
    const parts: FrameSlice[] = [];
    for (let at = from; at < to; at += PROGRESS_STEP) parts.push(check(at, Math.min(to, at + PROGRESS_STEP)));
    return parts.length ? mergeSlices(parts) : check(from, to);
  };
  const frames = mergeSlices(completeSlices(shared?.(check) ?? [], n, here));
  const recomputed = new Map(frames.mismatched);
  const hashAt = (index: number) => recomputed.get(index) ?? m.frames[index]!.hash;
  for (const p of chainProblems(m.frames, [frames])) {
    if (p.code === "TIME_REGRESSION") {
      add(p.code, "note", `frame ${p.seq}`, `Frame ${p.seq}'s time is earlier than the frame before it (${p.message}).`);
      continue;
    }
    broke(p.seq);
    add(p.code, "tamper", `frame ${p.seq}`, sentence(p.message));
  }
  summary.head = n > 0 ? hashAt(n - 1) : bytesToHex(genesisHash(chainId));

  const signatures = options.lockSignatures?.(m.locks);
  const locks = verifyLocks(m.locks, {
    ...(signatures && signatures.length === m.locks.length ? { signatures } : {}),
    chainId,
    frameCount: n,
    frameHash: hashAt,
    genesis: genesisHash(chainId),
    hostKey,
    serverKey: options.serverKey,
    hostId: m.run.host,
  });
  options.onProgress?.(0.9);
  for (const p of locks.problems) {
    if (p.code === "LOCK_TIME_REGRESSION") {
      add(p.code, "note", `lock ${p.lockSeq}`, sentence(p.message));
      continue;
    }
    const lock = locks.parsed[p.lockSeq];
    if (p.code === "LOCK_HEAD_MISMATCH" && lock) broke(Math.max(0, Math.min(lock.count, m.frames.length) - 1));
    add(p.code, "tamper", `lock ${p.lockSeq}`, sentence(p.message));
  }
  const finalLock = locks.parsed.find((l) => l?.final);
  if (finalLock && m.frames.length > finalLock.count) {
    broke(finalLock.count);
    add(
      "FRAMES_AFTER_FINAL",
      "tamper",
      `frame ${finalLock.count}`,
      `The chain holds ${m.frames.length - finalLock.count} frames after its final lock.`,
    );
  }
  summary.lockedFrames = locks.lockedCount;
  summary.finalLocked = locks.finalLocked;
  if (!locks.finalLocked) {
    const last = locks.parsed.at(-1);
    if (!last?.final)
      add("NOT_FINAL_LOCKED", "incomplete", "locks", "The run's record has no final lock, so a cut-off tail cannot be ruled out.");
  }
  if (locks.lockedCount < m.frames.length) {
    add(
      "UNLOCKED_TAIL",
      "incomplete",
      `frame ${locks.lockedCount}`,
      `Frames ${locks.lockedCount} to ${m.frames.length - 1} come after the last lock; only the server vouches for them.`,
    );
  }

  const derivedGaps = tallyGaps(frames.tally);
  const listed = new Map(m.gaps.map((g) => [gapKey(g), g]));
  for (const gap of derivedGaps) {
    const match = listed.get(gapKey(gap));
    if (!match) {
      add(
        "GAP_LIST_MISMATCH",
        "tamper",
        "gap list",
        `The chain shows a ${gap.kind} gap${gap.seq !== undefined ? ` at frame ${gap.seq}` : ""} that the bundle does not list.`,
      );
    } else if (gap.bodies && !gap.bodies.every((b) => match.bodies?.includes(b))) {
      add("GAP_LIST_MISMATCH", "tamper", "gap list", `The ${gap.kind} gap does not name every body the chain shows missing.`);
    }
  }
  const derivedKeys = new Set(derivedGaps.map(gapKey));
  for (const gap of m.gaps) {
    if (gap.source !== "server" && !derivedKeys.has(gapKey(gap))) {
      add(
        "GAP_LIST_MISMATCH",
        "tamper",
        "gap list",
        `The bundle lists a ${gap.kind} gap from the ${gap.source} that the chain does not show.`,
      );
    }
  }
  if (m.gaps.length > 0) {
    const kindsListed = [...new Set(m.gaps.map((g) => g.kind))].join(", ");
    add("GAPS", "incomplete", "gap list", `The record has ${m.gaps.length} gap${m.gaps.length === 1 ? "" : "s"} (${kindsListed}).`);
  }

  const facts = tallyCoverage(frames.tally);
  if (JSON.stringify(facts) !== JSON.stringify(m.coverage)) {
    add("COVERAGE_MISMATCH", "tamper", "coverage", "The coverage facts do not match what the chain holds.");
  }
  const input = { facts, gaps: m.gaps, environment: m.run.environment, mode: m.run.mode };
  const tier = enforcementTier(input);
  if (tier.value !== m.tier.value)
    add("TIER_MISMATCH", "tamper", "tier", `The bundle says tier ${m.tier.value}; the chain supports ${tier.value}.`);
  const grade = replayGrade(input);
  if (grade.value !== m.grade.value)
    add("GRADE_MISMATCH", "tamper", "grade", `The bundle says grade ${m.grade.value}; the chain supports ${grade.value}.`);

  for (const e of m.equivocations) {
    add("EQUIVOCATION", "note", `${e.what} ${e.seq}`, `The server kept a second, different ${e.what} ${e.seq} as evidence.`);
  }

  if (options.expectHead !== undefined && summary.head !== options.expectHead) {
    broke(m.frames.length);
    add("EXPECTED_HEAD_MISMATCH", "tamper", "head", `The last frame's hash is ${summary.head}, not the expected ${options.expectHead}.`);
  }

  if (options.body) {
    // A body named by several frames is read and hashed once; each frame's reference is still checked.
    const seen = new Map<string, { size: number; hashOk: boolean } | null>();
    for (const mention of frames.tally.mentions) {
      if (!mention.kept) continue;
      if (!seen.has(mention.sha256)) {
        const bytes = options.body(mention.sha256);
        seen.set(mention.sha256, bytes ? { size: bytes.length, hashOk: bytesToHex(sha256(bytes)) === mention.sha256 } : null);
        if (bytes) summary.bodiesChecked++;
      }
      const body = seen.get(mention.sha256)!;
      if (!body) {
        add(
          "BODY_MISSING",
          "incomplete",
          `body ${mention.sha256}`,
          `Frame ${mention.seq}'s ${mention.role} body is not in the bodies folder.`,
        );
      } else if (!body.hashOk || body.size !== mention.size) {
        add(
          "BODY_HASH_MISMATCH",
          "tamper",
          `body ${mention.sha256}`,
          `Frame ${mention.seq}'s ${mention.role} body does not match its hash or size.`,
        );
      }
    }
  }
  options.onProgress?.(1);
  return done(firstBroken, summary);
}

// The manifest's bytes are a slice of the file (the layout around it is ASCII), so its signature
// is checked without re-encoding a string that may be hundreds of megabytes.
function manifestBytes(file: Uint8Array | string, split: Extract<SplitBundle, { ok: true }>): Uint8Array | string {
  if (typeof file === "string") return split.manifestText;
  return file.subarray(split.start, file.length - split.suffixLength);
}

function sameRunId(host: string, harness: string, session: string, chainId: string): boolean {
  try {
    return runIdFor(host, harness, session) === chainId;
  } catch {
    // A string with a lone surrogate has no UTF-8 form, so no run id derives from it.
    return false;
  }
}

function sentence(text: string): string {
  const t = text.charAt(0).toUpperCase() + text.slice(1);
  return t.endsWith(".") ? t : `${t}.`;
}
