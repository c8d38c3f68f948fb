import { bodyRef, utf8, type BodyRef, type Policy, type Redaction } from "../../protocol/index.ts";
import { redact } from "../../protocol/redact.ts";

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

/** Whether the workspace keeps a body of this role: true, or why not. */
export function keepFor(retention: Policy["retention"] | null, role: Role): true | "digest_only" | "retention" {
  if (!retention) return true;
  if (retention.mode === "digest_only") return "digest_only";
  return retention.keep.includes(role) ? true : "retention";
}

/** Redacts, then hashes: credentials never reach a hash, a frame or the disk. */
export function makeBody(role: Role, value: unknown, retention: Policy["retention"] | null): Body {
  const text = bodyText(value).toWellFormed();
  const red = redact(text);
  const bytes = utf8(red.text);
  const ref = bodyRef(role, bytes, keepFor(retention, role));
  return {
    ref,
    digest: { sha256: ref.sha256, size: ref.size },
    redactions: red.redactions.map((r) => ({ role, kind: r.kind, sha256: r.sha256 })),
    bytes: ref.kept ? bytes : null,
  };
}

/** The `bodies` and `redactions` fields of a payload for some bodies (omitted when empty). */
export function bodyFields(bodies: Body[]): { bodies?: BodyRef[]; redactions?: Redaction[] } {
  const out: { bodies?: BodyRef[]; redactions?: Redaction[] } = {};
  if (bodies.length) out.bodies = bodies.map((b) => b.ref);
  const redactions = bodies.flatMap((b) => b.redactions).slice(0, 256);
  if (redactions.length) out.redactions = redactions;
  return out;
}
