/**
 * Export bundles: a run's whole record, signed as a whole by the server. What a bundle holds is
 * a {@link Manifest}; how it is written is its layout: version 2 (`bundle-stream.ts`) is what the
 * server writes, JSON lines streamed a page at a time; version 1, one JSON document, is still read.
 *
 * A version-1 bundle file is UTF-8 JSON in one exact layout:
 * ```
 * {"oxagen_bundle":1,"payload_type":"application/vnd.oxagen.bundle.v1+json","manifest":MANIFEST,"signature":{"key_id":"K","sig":"S"}}\n
 * ```
 * MANIFEST is the manifest's JSON text, byte for byte as the server wrote it; K is the server
 * key's id (16 hex) and S the Ed25519 signature (128 hex) over
 * `"oxagen/bundle/v1" 0x00 || SHA-256(MANIFEST bytes)`. The trailing newline is optional.
 * Re-formatting the file breaks the layout, and a verifier refuses it rather than guess.
 * @module
 */
import { z } from "zod";
import { bytesToHex } from "./bytes.ts";
import { CoverageFacts, enforcementTier, Environment, GRADES, replayGrade, TIERS, tallyCoverage } from "./assess.ts";
import { checkFrame, FrameWire, MAX_PAYLOAD_CHARS } from "./chain.ts";
import { emptyTally, type PayloadTally, tallyFrame } from "./frame-check.ts";
import { Gap, tallyGaps } from "./gaps.ts";
import { ChainId, HostId, keyIdFor, Sha256Hex } from "./ids.ts";
import { SignedLock } from "./lock.ts";

export {
  BUNDLE_PAYLOAD_TYPE,
  BUNDLE_PREFIX,
  BUNDLE_V2_PAYLOAD_TYPE,
  bundleSignatureValid,
  bundleSigningInput,
  bundleV2SigningInput,
  bundleVersion,
  inExportedForm,
  splitBundle,
  type SplitBundle,
} from "./bundle-layout.ts";

/** The largest version-1 bundle a verifier reads, in bytes (version 2 is read as a stream, of any size). */
export const MAX_BUNDLE_BYTES = 256 * 1024 * 1024;

const keyId = z.string().regex(/^[0-9a-f]{16}$/);

/** A frame as a bundle holds it: the wire frame plus the hash the server recorded for it. */
export const BundleFrame = FrameWire.extend({ hash: Sha256Hex });
/** A lock as a bundle holds it, with the time the server received it. */
export const BundleLock = SignedLock.extend({ received_ms: z.number().int().nonnegative() });
const ms = z.number().int().nonnegative();

/** The manifest: everything a bundle says about a run. */
export const Manifest = z.strictObject({
  v: z.literal(1),
  run: z.strictObject({
    id: ChainId,
    workspace: z.string().min(1).max(128),
    host: HostId,
    harness: z.string().min(1).max(64),
    agent: z.string().min(1).max(64).nullable(),
    session_id: z.string().min(1).max(256),
    status: z.enum(["live", "ended", "crashed", "closed", "sealed"]),
    outcome: z.string().min(1).max(32).nullable(),
    environment: Environment,
    mode: z.enum(["enforce", "observe"]),
    first_frame_ms: ms.nullable(),
    last_frame_ms: ms.nullable(),
  }),
  exported_ms: ms,
  server_key_id: keyId,
  host_key: z.strictObject({ pub: Sha256Hex, key_id: keyId }),
  frames: z.array(BundleFrame),
  locks: z.array(BundleLock),
  equivocations: z.array(
    z.strictObject({
      what: z.enum(["frame", "lock"]),
      seq: z.number().int().nonnegative(),
      evidence: z.string().max(70_000),
      received_ms: ms,
    }),
  ),
  gaps: z.array(Gap),
  tier: z.strictObject({ value: z.enum(TIERS), reason: z.string() }),
  grade: z.strictObject({ value: z.enum(GRADES), reason: z.string() }),
  coverage: CoverageFacts,
});
/** One of {@link Manifest}. */
export type Manifest = z.infer<typeof Manifest>;

/** What the server knows of a run when it exports it. */
export interface ManifestInput {
  run: Manifest["run"];
  exportedMs: number;
  serverKeyId: string;
  hostKey: Uint8Array;
  frames: Manifest["frames"];
  locks: Manifest["locks"];
  equivocations: Manifest["equivocations"];
  /** Gaps only the server could see (source `server`). */
  serverGaps: Gap[];
}

/** What a bundle derives from its frames and its gaps: coverage facts, enforcement tier, replay grade. */
export function assessBundle(
  run: Pick<Manifest["run"], "environment" | "mode">,
  tally: PayloadTally,
  gaps: readonly Pick<Gap, "kind">[],
): Pick<Manifest, "tier" | "grade" | "coverage"> {
  const coverage = tallyCoverage(tally);
  const assessed = { facts: coverage, gaps, environment: run.environment, mode: run.mode };
  return { tier: enforcementTier(assessed), grade: replayGrade(assessed), coverage };
}

/**
 * Puts a manifest together: the chain's own gaps are derived from its frames and listed before
 * the server's, and coverage, tier and grade are derived from the frames and all the gaps.
 */
export function assembleManifest(input: ManifestInput): Manifest {
  const tally = emptyTally();
  input.frames.forEach((f, index) => {
    tallyFrame(tally, index, f.kind, checkFrame(f).payload);
  });
  const gaps = [...tallyGaps(tally), ...input.serverGaps];
  return {
    v: 1,
    run: input.run,
    exported_ms: input.exportedMs,
    server_key_id: input.serverKeyId,
    host_key: { pub: bytesToHex(input.hostKey), key_id: keyIdFor(input.hostKey) },
    frames: input.frames,
    locks: input.locks,
    equivocations: input.equivocations,
    gaps,
    ...assessBundle(input.run, tally, gaps),
  };
}

/**
 * The manifest schema without its two long arrays, for verifiers that check frames and locks
 * with {@link bundleFrameProblem} (zod per frame costs more than the rest of verification).
 */
export const ManifestHead = Manifest.extend({ frames: z.array(z.unknown()), locks: z.array(BundleLock) });

const HEX64 = /^[0-9a-f]{64}$/;
/** Why a value is not a {@link BundleFrame}, or null; the same rules as the zod schema, checked by hand. */
export function bundleFrameProblem(value: unknown): string | null {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "frame is not an object";
  const f = value as Record<string, unknown>;
  let keys = 0;
  for (const key in f) {
    keys++;
    if (key !== "seq" && key !== "t" && key !== "kind" && key !== "payload" && key !== "hash") return `frame has an unknown field "${key}"`;
  }
  if (keys !== 5) return "frame lacks a field (seq, t, kind, payload, hash)";
  if (!Number.isSafeInteger(f.seq) || (f.seq as number) < 0) return "seq is not a non-negative integer";
  if (!Number.isSafeInteger(f.t) || (f.t as number) < 0) return "t is not a non-negative integer";
  if (typeof f.kind !== "string" || f.kind.length < 1 || f.kind.length > 64) return "kind is not a string of 1 to 64 characters";
  if (typeof f.payload !== "string" || f.payload.length < 2 || f.payload.length > MAX_PAYLOAD_CHARS)
    return "payload is not a string of 2 to 65536 characters";
  if (typeof f.hash !== "string" || !HEX64.test(f.hash)) return "hash is not 64 lowercase hex characters";
  return null;
}
