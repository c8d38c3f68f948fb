import { bodyRef, keepFor, sha256Hex, utf8, type BodyRef, type Policy, type Redaction } from "../../protocol/index.ts";
import { type RedactResult, redact } from "../../protocol/redact.ts";

type Role = BodyRef["role"];

/** A body after redaction: its reference for the frame, its removals, and its bytes when kept. */
export interface Body {
  ref: BodyRef;
  digest: { sha256: string; size: number };
  redactions: Redaction[];
  bytes: Uint8Array | null;
}

/** The text of a value as recorded: strings as they are, anything else as JSON. */
export function bodyText(value: unknown): string {
  if (typeof value === "string") return value;
  return JSON.stringify(value ?? null) ?? "null";
}

/**
 * Redacts, then hashes: credentials never reach a hash, a frame or the disk. `redactor` is how the
 * text is scanned (the gateway's streamed responses: by their content, collector/gateway/model/sse-redact.ts).
 * `encoded`, when given, is the value's own UTF-8 encoding (a text decoded from valid UTF-8): hashed
 * and kept as it is when nothing is redacted, rather than encoded again.
 */
export function makeBody(
  role: Role,
  value: unknown,
  retention: Policy["retention"] | null,
  redactor: (text: string) => RedactResult = redact,
  encoded?: Uint8Array,
): Body {
  const cut = oversizeOf(value);
  if (cut) {
    // `tacho hook` hashed the real bytes (same rule as below) and kept only their digest.
    const ref: BodyRef = { role, sha256: cut.sha256, size: cut.size, kept: false, why: "over_limit" };
    const redactions = (cut.redactions ?? []).map((r) => ({ role, kind: r.kind, sha256: r.sha256 }));
    return { ref, digest: { sha256: cut.sha256, size: cut.size }, redactions, bytes: null };
  }
  const text = bodyText(value).toWellFormed();
  const red = redactor(text);
  const bytes = encoded && red.text === text ? encoded : utf8(red.text);
  const ref = bodyRef(role, bytes, keepFor(retention, role));
  return {
    ref,
    digest: { sha256: ref.sha256, size: ref.size },
    redactions: red.redactions.map((r) => ({ role, kind: r.kind, sha256: r.sha256 })),
    bytes: ref.kept ? bytes : null,
  };
}

/** The key of a value `tacho hook` replaced by the digest of its real bytes (see {@link cutOversize}). */
export const OVERSIZE_KEY = "$oxagen_oversize";

/** The digest `tacho hook` kept of a value too large to forward: of its bytes after redaction, as makeBody hashes them. */
export interface OversizeDigest {
  sha256: string;
  size: number;
  redactions?: { kind: string; sha256: string }[];
}

/** The digest a value stands for when `tacho hook` cut it; null for a value it forwarded. */
export function oversizeOf(value: unknown): OversizeDigest | null {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const d = (value as Record<string, unknown>)[OVERSIZE_KEY] as Partial<OversizeDigest> | undefined;
  if (!d || typeof d !== "object" || typeof d.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(d.sha256)) return null;
  if (typeof d.size !== "number" || !Number.isSafeInteger(d.size) || d.size < 0) return null;
  const redactions = Array.isArray(d.redactions)
    ? d.redactions.filter((r) => typeof r?.kind === "string" && /^[a-z0-9_]{1,48}$/.test(r.kind) && /^[0-9a-f]{64}$/.test(r.sha256))
    : [];
  return { sha256: d.sha256, size: d.size, ...(redactions.length ? { redactions: redactions.slice(0, 256) } : {}) };
}

/** Members of a cut object kept beside its digest: what derives command, file and network frames. */
const KEPT_MEMBER_CHARS = 8 * 1024;

/**
 * What `tacho hook` forwards in place of a value whose body would be over 1 MiB: the SHA-256 and
 * size of the bytes the recorder would have hashed (redacted first, as in makeBody), so the frame
 * names the real content and says it was not kept; for an object, its small members too.
 */
export function cutOversize(value: unknown): Record<string, unknown> {
  const red = redact(bodyText(value).toWellFormed());
  const bytes = utf8(red.text);
  const digest: OversizeDigest = { sha256: sha256Hex(bytes), size: bytes.length };
  if (red.redactions.length) digest.redactions = red.redactions.slice(0, 256);
  const kept: Record<string, unknown> = {};
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) if ((JSON.stringify(v) ?? "").length <= KEPT_MEMBER_CHARS) kept[k] = v;
  }
  return { ...kept, [OVERSIZE_KEY]: digest };
}

/** The size in bytes of a value's body text (what makeBody would hash, before redaction). */
export function bodySize(value: unknown): number {
  return Buffer.byteLength(bodyText(value));
}

/** The `bodies` and `redactions` fields of a payload for some bodies (omitted when empty). */
export function bodyFields(bodies: Body[]): { bodies?: BodyRef[]; redactions?: Redaction[] } {
  const out: { bodies?: BodyRef[]; redactions?: Redaction[] } = {};
  if (bodies.length) out.bodies = bodies.map((b) => b.ref);
  const redactions = bodies.flatMap((b) => b.redactions).slice(0, 256);
  if (redactions.length) out.redactions = redactions;
  return out;
}
