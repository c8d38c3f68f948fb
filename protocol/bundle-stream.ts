/**
 * Version-2 export bundles: JSON lines, written and read one line at a time, so neither the
 * server that streams one nor a verifier that reads one holds more than a few lines of it.
 *
 * A bundle file is UTF-8 text, one JSON object per line, each line ending with LF (the last
 * line's LF may be absent), no other white space. Each line is exactly what `JSON.stringify`
 * writes for its value, except frame lines, whose payload is the payload's own text. In order:
 * ```
 * {"oxagen_bundle":2,"payload_type":"application/vnd.oxagen.bundle.v2+jsonl","run":{…},"exported_ms":N,"server_key_id":"K","host_key":{…}}
 * {"lock":{"payload":"…","sig":"…","received_ms":N}}                       each lock, in lock_seq order
 * {"seq":S,"t":T,"kind":"…","hash":"H","payload":{…}}                       each frame, in seq order
 * {"equivocation":{"what":"frame","seq":N,"evidence":"…","received_ms":N}}  each piece of evidence
 * {"gap":{…,"bodies":[≤ 1,000 hashes],"detail":"…"}}                        each gap, then
 * {"gap_bodies":[≤ 1,000 hashes]}                                            the rest of its bodies
 * {"end":{"tier":{…},"grade":{…},"coverage":{…}}}
 * {"signature":{"key_id":"K","sig":"S"}}
 * ```
 * S is the Ed25519 signature by the server key K over
 * `"oxagen/bundle/v2" 0x00 || SHA-256(every byte of the file before the signature line)`, a
 * running hash the writer and the verifier each compute in one pass.
 * @module
 */
import { z } from "zod";
import { BUNDLE_V2_PAYLOAD_TYPE, bundleV2SigningInput } from "./bundle-layout.ts";
import { assessBundle, BundleLock, Manifest } from "./bundle.ts";
import { bytesToHex } from "./bytes.ts";
import { sign } from "./ed25519.ts";
import { addTally, emptyTally, type PayloadTally } from "./frame-check.ts";
import type { Frame } from "./frame-hash.ts";
import { FRAME_LINE_START } from "./frame-lines.ts";
import { Gap, tallyGaps } from "./gaps.ts";
import { type Sha256Stream, sha256Stream } from "./hash.ts";
import { Sha256Hex } from "./ids.ts";

/** The most hashes one gap or `gap_bodies` line holds. */
export const GAP_BODIES_PER_LINE = 1000;
/** The longest line a version-2 bundle may hold, in bytes (a frame line is at most about 200 KiB). */
export const MAX_LINE_BYTES = 1024 * 1024;

/** A version-2 bundle's head line. */
export const HeadLine = z.strictObject({
  oxagen_bundle: z.literal(2),
  payload_type: z.literal(BUNDLE_V2_PAYLOAD_TYPE),
  run: Manifest.shape.run,
  exported_ms: Manifest.shape.exported_ms,
  server_key_id: Manifest.shape.server_key_id,
  host_key: Manifest.shape.host_key,
});
/** A bundle's head: what it says about the run before any lock or frame. */
export type BundleHead = Pick<Manifest, "run" | "exported_ms" | "server_key_id" | "host_key">;
/** The end line: what the server derived from the frames and the gaps. */
export const EndLine = z.strictObject({
  end: z.strictObject({ tier: Manifest.shape.tier, grade: Manifest.shape.grade, coverage: Manifest.shape.coverage }),
});
/** What the end line holds. */
export type BundleEnd = z.infer<typeof EndLine>["end"];

const bodies = z.array(Sha256Hex).min(1).max(GAP_BODIES_PER_LINE);
/** The schemas of the lines between the head and the end, by their one member. */
export const LINES = {
  lock: z.strictObject({ lock: BundleLock }),
  equivocation: z.strictObject({
    equivocation: z.strictObject({
      what: z.enum(["frame", "lock"]),
      seq: z.number().int().nonnegative(),
      evidence: z.string().max(70_000),
      received_ms: z.number().int().nonnegative(),
    }),
  }),
  gap: z.strictObject({ gap: Gap.extend({ bodies: bodies.optional() }) }),
  gap_bodies: z.strictObject({ gap_bodies: bodies }),
} as const;

/** What a line of a version-2 bundle is, from its first bytes. */
export type LineKind = "head" | "frame" | keyof typeof LINES | "end" | "signature";

const STARTS: [string, LineKind][] = [
  [FRAME_LINE_START, "frame"],
  ['{"lock":', "lock"],
  ['{"equivocation":', "equivocation"],
  ['{"gap":', "gap"],
  ['{"gap_bodies":', "gap_bodies"],
  ['{"end":', "end"],
  ['{"signature":', "signature"],
  ['{"oxagen_bundle":', "head"],
].map(([text, kind]) => [text as string, kind as LineKind]);
const STARTS_BYTES = STARTS.map(([text, kind]) => [Uint8Array.from(text, (c) => c.charCodeAt(0)), kind] as const);

/** The kind of the line that starts at `at`, or null when it starts as no line of the layout does. */
export function lineKind(buf: Uint8Array, at: number): LineKind | null {
  for (const [start, kind] of STARTS_BYTES) {
    let i = 0;
    while (i < start.length && buf[at + i] === start[i]) i++;
    if (i === start.length) return kind;
  }
  return null;
}

/** The head line. */
export function headLine(h: BundleHead): string {
  const { run, exported_ms, server_key_id, host_key } = h;
  return JSON.stringify({ oxagen_bundle: 2, payload_type: BUNDLE_V2_PAYLOAD_TYPE, run, exported_ms, server_key_id, host_key });
}

/** A lock's line. */
export function lockLine(l: Manifest["locks"][number]): string {
  return JSON.stringify({ lock: { payload: l.payload, sig: l.sig, received_ms: l.received_ms } });
}

/** A frame's line: the payload is written as it is, so its bytes are the ones its hash covers. */
export function frameLine(f: Frame & { hash: string }): string {
  return `${FRAME_LINE_START}${f.seq},"t":${f.t},"kind":${JSON.stringify(f.kind)},"hash":"${f.hash}","payload":${f.payload}}`;
}

/** A piece of equivocation evidence's line. */
export function equivocationLine(e: Manifest["equivocations"][number]): string {
  return JSON.stringify({ equivocation: { what: e.what, seq: e.seq, evidence: e.evidence, received_ms: e.received_ms } });
}

/** A gap's lines: the gap with its first bodies, then lines of the rest. */
export function gapLines(g: Gap): string[] {
  const { kind, source, seq, from_seq, to_seq, count, bodies, detail } = g;
  const first = bodies?.slice(0, GAP_BODIES_PER_LINE);
  const lines = [JSON.stringify({ gap: { kind, source, seq, from_seq, to_seq, count, bodies: first, detail } })];
  for (let at = GAP_BODIES_PER_LINE; bodies && at < bodies.length; at += GAP_BODIES_PER_LINE) {
    lines.push(gapBodiesLine(bodies.slice(at, at + GAP_BODIES_PER_LINE)));
  }
  return lines;
}

/** A line continuing the last gap's bodies (1 to {@link GAP_BODIES_PER_LINE} hashes). */
export function gapBodiesLine(hashes: readonly string[]): string {
  return JSON.stringify({ gap_bodies: hashes });
}

/** The end line. */
export function endLine(e: BundleEnd): string {
  return JSON.stringify({ end: { tier: e.tier, grade: e.grade, coverage: e.coverage } });
}

const encoder = new TextEncoder();

/**
 * Writes a version-2 bundle a piece at a time and keeps the running hash of every byte it hands
 * out, so the signature written last covers them all. Holds only what was written since the
 * last {@link take}.
 */
export class BundleWriter {
  readonly #hash: Sha256Stream;
  #pending: string[] = [];

  constructor(h: BundleHead, hash: Sha256Stream = sha256Stream()) {
    this.#hash = hash;
    this.line(headLine(h));
  }

  /** Adds one line (without its LF). */
  line(text: string): void {
    this.#pending.push(text, "\n");
  }

  /** Adds lines already joined, each ending with LF (e.g. a page of frame lines). */
  lines(text: string): void {
    this.#pending.push(text);
  }

  /** The bytes written since the last call, hashed. */
  take(): Uint8Array {
    const bytes = encoder.encode(this.#pending.join(""));
    this.#pending = [];
    this.#hash.update(bytes);
    return bytes;
  }

  /** The last bytes: what is pending, then the signature line over everything before it. */
  sign(secretKey: Uint8Array, keyId: string): Uint8Array {
    const rest = this.take();
    const sig = bytesToHex(sign(secretKey, bundleV2SigningInput(this.#hash.digest())));
    const last = encoder.encode(`{"signature":{"key_id":"${keyId}","sig":"${sig}"}}\n`);
    const out = new Uint8Array(rest.length + last.length);
    out.set(rest);
    out.set(last, rest.length);
    return out;
  }
}

/** Writes a whole bundle, its content given as a manifest (for tests and the known-answer vectors). */
export function writeBundle(m: Manifest, serverSecretKey: Uint8Array, serverKeyId: string): string {
  const w = new BundleWriter(m);
  for (const l of m.locks) w.line(lockLine(l));
  for (const f of m.frames) w.line(frameLine(f));
  for (const e of m.equivocations) w.line(equivocationLine(e));
  for (const g of m.gaps) for (const line of gapLines(g)) w.line(line);
  w.line(endLine(m));
  const parts = [w.take(), w.sign(serverSecretKey, serverKeyId)];
  const decoder = new TextDecoder();
  return parts.map((p) => decoder.decode(p)).join("");
}

/** A run's parts as pages, in bundle order, for {@link assembleBundle}. */
export interface BundleParts {
  head: BundleHead;
  /** Pages of lock lines, in lock_seq order, each line ending with LF. */
  locks: AsyncIterable<string>;
  /** Pages of frame lines, in seq order, with the tally of their frames. */
  frames: AsyncIterable<{ lines: string; tally: PayloadTally }>;
  /** Pages of equivocation lines. */
  equivocations: AsyncIterable<string>;
  /** Pages of the gaps only the server sees. */
  serverGaps: AsyncIterable<readonly Gap[]>;
  /** Pages of kept bodies that have not arrived (in hash order), listed last as one `missing_bodies` gap when there are any. */
  missingBodies: AsyncIterable<readonly string[]>;
}

/**
 * Writes a version-2 bundle from its parts as they come, and signs it: the bytes to send, a page
 * at a time. The chain's own gaps (listed before the server's) and the coverage facts, tier and
 * grade are derived from the frames' tallies on the way, so nothing but the tally is kept from
 * one page to the next.
 */
export async function* assembleBundle(parts: BundleParts, secretKey: Uint8Array, keyId: string): AsyncGenerator<Uint8Array> {
  const w = new BundleWriter(parts.head);
  yield w.take();
  for await (const lines of parts.locks) {
    w.lines(lines);
    yield w.take();
  }
  const tally = emptyTally();
  for await (const page of parts.frames) {
    w.lines(page.lines);
    addTally(tally, page.tally);
    yield w.take();
  }
  for await (const lines of parts.equivocations) {
    w.lines(lines);
    yield w.take();
  }
  const kinds: { kind: string }[] = [];
  const gap = (g: Gap) => {
    if (!kinds.some((k) => k.kind === g.kind)) kinds.push({ kind: g.kind });
    for (const line of gapLines(g)) w.line(line);
  };
  for (const g of tallyGaps(tally)) gap(g);
  for await (const page of parts.serverGaps) {
    for (const g of page) gap(g);
    yield w.take();
  }
  let listed = false;
  for await (const page of parts.missingBodies) {
    for (let at = 0; at < page.length; at += GAP_BODIES_PER_LINE) {
      const bodies = page.slice(at, at + GAP_BODIES_PER_LINE);
      if (listed) w.line(gapBodiesLine(bodies));
      else
        gap({
          kind: "missing_bodies",
          source: "server",
          bodies,
          detail: "kept bodies named by the record had not reached the server when it was exported",
        });
      listed = true;
    }
    yield w.take();
  }
  w.line(endLine(assessBundle(parts.head.run, tally, kinds)));
  yield w.sign(secretKey, keyId);
}
