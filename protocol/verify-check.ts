/**
 * Verifying a bundle, phase by phase, whatever its layout: the reader of each layout
 * (`verify-bundle-v1.ts`, `verify-bundle-v2.ts`) hands a {@link BundleCheck} the bundle's parts in the order a
 * bundle holds them, and the check keeps what each phase found in one ordered list of findings.
 * It holds the bundle's locks and gaps, never its frames: those arrive in chunks, already checked.
 * @module
 */
import { bytesToHex, fromHex } from "./bytes.ts";
import { tallyCoverage } from "./assess.ts";
import { assessBundle, type Manifest } from "./bundle.ts";
import { publicKeyProblem } from "./ed25519.ts";
import { addTally, type BodyMention, emptyTally, type FrameChunk, FrameProblems } from "./frame-check.ts";
import { genesisHash } from "./frame-hash.ts";
import { type Gap, gapKey, tallyGaps } from "./gaps.ts";
import { sha256 } from "./hash.ts";
import { keyIdFor, runIdFor } from "./ids.ts";
import { type LockPayload, parseLock, type SignedLock } from "./lock.ts";
import { verifyLocks } from "./lock-check.ts";
import { type PinnedKey, pickKey, pinKey } from "./server-keys.ts";
import {
  emptySummary,
  exitFor,
  type Finding,
  FindingList,
  finding,
  lockFindings,
  sentence,
  type VerifyOptions,
  type VerifyResult,
} from "./verify-findings.ts";

/** A bundle's head, in either layout: what it says about the run before its locks and frames. */
export type BundleHeadParts = Pick<Manifest, "run" | "exported_ms" | "server_key_id" | "host_key">;

/** A lock signature to check, under the key of the signer its payload names (null: no key). */
export interface LockSignatureJob {
  payload: string;
  sig: string;
  key: Uint8Array | null;
}

// Bodies already read, by hash; cleared when full, so a run naming millions of bodies costs a
// bounded amount of memory (a body then named again is read again).
const BODY_CACHE = 65_536;

/**
 * The phases of verification, fed in bundle order: {@link signature} and {@link head}, the
 * {@link lock}s then {@link locksDone}, the frames' chunks in order ({@link frames}, with
 * {@link claimed} hashes at the positions {@link locksDone} asks for and at each chunk's end),
 * {@link equivocation}s, {@link gap}s, {@link end}, then {@link finish}. A layout problem or an
 * invalid manifest ends the phases: everything but the signature's findings is then dropped.
 */
export class BundleCheck {
  readonly #options: VerifyOptions;
  readonly #keys: readonly PinnedKey[];
  #stop: Finding | null = null;
  #void: Finding | null = null;
  #signature: { keyId: string; valid: (key: Uint8Array) => boolean } | null = null;
  #head: BundleHeadParts | null = null;
  #hostKey: Uint8Array = new Uint8Array(32);
  readonly #manifest: Finding[] = [];
  readonly #locks: SignedLock[] = [];
  readonly #parsedLocks: (LockPayload | null)[] = [];
  #lockSignatures: boolean[] | null = null;
  readonly #heads = new Map<number, string>();
  readonly #mismatched = new Map<number, string>();
  readonly #problems = new FrameProblems();
  readonly #frames = new FindingList();
  readonly #tally = emptyTally();
  #count = 0;
  #firstBroken: number | null = null;
  readonly #equivocations: Finding[] = [];
  #derived: Gap[] | null = null;
  readonly #listed = new Map<string, Set<string>>();
  #listing: Set<string> | null = null;
  readonly #extraGaps: Finding[] = [];
  readonly #gapKinds: { kind: string }[] = [];
  readonly #gapCounts = new Map<string, number>();
  #gapCount = 0;
  #end: Pick<Manifest, "tier" | "grade" | "coverage"> | null = null;
  readonly #bodies = new FindingList();
  readonly #bodyCache = new Map<string, { size: number; hashOk: boolean } | null>();
  #bodiesChecked = 0;

  constructor(options: VerifyOptions) {
    this.#options = options;
    const keys = options.serverKey instanceof Uint8Array ? [options.serverKey] : options.serverKey.map((k) => k.pub);
    this.#keys = options.serverKey instanceof Uint8Array ? [pinKey(options.serverKey)] : options.serverKey;
    for (const key of keys) {
      const problem = key.length === 32 ? publicKeyProblem(key) : "the server key is not 32 bytes";
      if (problem) {
        this.#stop = finding("KEY_INVALID", "unverifiable", "server key", `The pinned server key cannot be used: ${problem}.`);
        break;
      }
    }
    if (keys.length === 0) this.#stop = finding("KEY_INVALID", "unverifiable", "server key", "No server key is pinned.");
  }

  /** Whether nothing more is worth reading: the key, the file or its layout make the bundle unverifiable. */
  get stopped(): boolean {
    return this.#stop !== null;
  }

  /** Whether the manifest is invalid: only the signature is still checked. */
  get voided(): boolean {
    return this.#stop !== null || this.#void !== null;
  }

  /** The bundle cannot be read (too large, not UTF-8, not in a layout, an unknown version): the only finding. */
  unreadable(code: "TOO_LARGE" | "UNREADABLE" | "BUNDLE_LAYOUT" | "UNSUPPORTED_VERSION", message: string): void {
    this.#stop ??= finding(code, "unverifiable", "bundle", message);
  }

  /** The manifest (or a line of it) is not what the layout allows: everything but the signature is dropped. */
  invalid(where: string, message: string, code: "MANIFEST_INVALID" | "UNSUPPORTED_VERSION" = "MANIFEST_INVALID"): void {
    this.#void ??= finding(code, "unverifiable", where, message);
  }

  /** The bundle's signature: by key `keyId`, `valid` checking it under a key once the bundle is read. */
  signature(keyId: string, valid: (key: Uint8Array) => boolean): void {
    this.#signature = { keyId, valid };
  }

  /** The run, the export time, the server key id and the host key. */
  head(h: BundleHeadParts): void {
    this.#head = h;
    const run = h.run;
    if (!sameRunId(run.host, run.harness, run.session_id, run.id)) {
      this.#manifest.push(
        finding("RUN_ID_MISMATCH", "tamper", "manifest", "The run id is not the one its host, harness and session id give."),
      );
    }
    if (this.#signature && h.server_key_id !== this.#signature.keyId) {
      this.#manifest.push(
        finding("SERVER_KEY_MISMATCH", "tamper", "manifest", "The manifest names a different server key than its signature."),
      );
    }
    this.#hostKey = fromHex(h.host_key.pub, 32);
    const hostKeyProblem = publicKeyProblem(this.#hostKey);
    if (hostKeyProblem)
      this.#manifest.push(finding("HOST_KEY_INVALID", "tamper", "manifest", `The host key is unacceptable: ${hostKeyProblem}.`));
    if (keyIdFor(this.#hostKey) !== h.host_key.key_id) {
      this.#manifest.push(finding("HOST_KEY_INVALID", "tamper", "manifest", "The host key's id does not match the key."));
    }
  }

  /** The next lock, in the bundle's order. */
  lock(lock: SignedLock): void {
    this.#locks.push(lock);
  }

  /**
   * Ends the locks: the positions of the frames whose hashes the locks name (each lock's count − 1),
   * for {@link claimed}, and the lock signatures to check, each under its key.
   */
  locksDone(): { heads: number[]; signatures: LockSignatureJob[] } {
    const heads = new Set<number>();
    const signatures = this.#locks.map((lock, i) => {
      const p = safeParseLock(lock);
      this.#parsedLocks[i] = p;
      if (p && p.count > 0) heads.add(p.count - 1);
      return { payload: lock.payload, sig: lock.sig, key: p ? this.#keyFor(p) : null };
    });
    return { heads: [...heads].sort((a, b) => a - b), signatures };
  }

  /** Lock signatures checked elsewhere, in the order {@link locksDone} gave them (null: check them here). */
  lockSignatures(valid: boolean[] | null): void {
    this.#lockSignatures = valid && valid.length === this.#locks.length ? valid : null;
  }

  /** The hash frame `index` carries, for a position {@link locksDone} asked for or the last of a chunk. */
  claimed(index: number, hash: string): void {
    this.#heads.set(index, hash);
  }

  /** The next chunk of checked frames, in order. */
  frames(chunk: FrameChunk): void {
    for (const p of this.#problems.add(chunk)) {
      if (p.code === "TIME_REGRESSION") {
        this.#frames.push(
          finding(p.code, "note", `frame ${p.seq}`, `Frame ${p.seq}'s time is earlier than the frame before it (${p.message}).`),
        );
        continue;
      }
      this.#broke(p.seq);
      this.#frames.push(finding(p.code, "tamper", `frame ${p.seq}`, sentence(p.message)));
    }
    for (const [index, hash] of chunk.mismatched) if (this.#heads.has(index) || index === chunk.to - 1) this.#mismatched.set(index, hash);
    addTally(this.#tally, chunk.tally);
    this.#count = chunk.to;
    for (const mention of chunk.kept) this.#checkBody(mention);
  }

  /** The next piece of equivocation evidence. */
  equivocation(e: Manifest["equivocations"][number]): void {
    this.#equivocations.push(
      finding("EQUIVOCATION", "note", `${e.what} ${e.seq}`, `The server kept a second, different ${e.what} ${e.seq} as evidence.`),
    );
  }

  /** The next gap the bundle lists (its `bodies` may continue in {@link gapBodies}). */
  gap(gap: Gap): void {
    this.#gapCount++;
    this.#gapCounts.set(gap.kind, (this.#gapCounts.get(gap.kind) ?? 0) + 1);
    if (!this.#gapKinds.some((g) => g.kind === gap.kind)) this.#gapKinds.push({ kind: gap.kind });
    const key = gapKey(gap);
    this.#listing = null;
    if (this.#derivedGaps().some((d) => gapKey(d) === key)) {
      // A later gap with the same key takes the place of an earlier one.
      this.#listing = new Set(gap.bodies ?? []);
      this.#listed.set(key, this.#listing);
    } else if (gap.source !== "server") {
      this.#extraGaps.push(
        finding(
          "GAP_LIST_MISMATCH",
          "tamper",
          "gap list",
          `The bundle lists a ${gap.kind} gap from the ${gap.source} that the chain does not show.`,
        ),
      );
    }
  }

  /** More bodies of the last gap. */
  gapBodies(bodies: readonly string[]): void {
    for (const b of bodies) this.#listing?.add(b);
  }

  /** What the bundle says it derived: tier, grade and coverage facts. */
  end(e: Pick<Manifest, "tier" | "grade" | "coverage">): void {
    this.#end = e;
  }

  /** The result. */
  finish(): VerifyResult {
    if (this.#stop) return { exit: exitFor([this.#stop]), findings: [this.#stop], firstBrokenSeq: null, summary: emptySummary() };
    const signed = this.#signatureFindings();
    if (this.#void || !this.#head || !this.#end) {
      const invalid = this.#void ?? finding("MANIFEST_INVALID", "unverifiable", "manifest", "The bundle ends before its manifest does.");
      const findings = [...signed, invalid];
      return { exit: exitFor(findings), findings, firstBrokenSeq: null, summary: emptySummary() };
    }
    const run = this.#head.run;
    const n = this.#count;
    const summary = emptySummary();
    summary.run = run.id;
    summary.frames = n;
    summary.locks = this.#locks.length;
    summary.gaps = this.#gapCount;
    summary.tier = this.#end.tier.value;
    summary.grade = this.#end.grade.value;
    summary.head = n > 0 ? this.#hashAt(n - 1) : bytesToHex(genesisHash(run.id));
    const locks = this.#lockFindings(summary);
    const gaps = this.#gapFindings();
    const assessed = this.#assessFindings();
    const head: Finding[] = [];
    const expect = this.#options.expectHead;
    if (expect !== undefined && summary.head !== expect) {
      this.#broke(n);
      head.push(
        finding("EXPECTED_HEAD_MISMATCH", "tamper", "head", `The last frame's hash is ${summary.head}, not the expected ${expect}.`),
      );
    }
    summary.bodiesChecked = this.#bodiesChecked;
    summary.harness = run.harness;
    summary.coverage = tallyCoverage(this.#tally);
    summary.gapCounts = Object.fromEntries(this.#gapCounts);
    const findings = [
      ...signed,
      ...this.#manifest,
      ...this.#frames.list(),
      ...locks,
      ...gaps,
      ...assessed,
      ...this.#equivocations,
      ...head,
      ...this.#bodies.list(),
    ];
    return { exit: exitFor(findings), findings, firstBrokenSeq: this.#firstBroken, summary };
  }

  #broke(seq: number): void {
    if (this.#firstBroken === null || seq < this.#firstBroken) this.#firstBroken = seq;
  }

  #hashAt(index: number): string {
    return this.#mismatched.get(index) ?? this.#heads.get(index) ?? "";
  }

  #keyFor(p: LockPayload): Uint8Array | null {
    return p.signer === "host" ? this.#hostKey : pickKey(this.#keys, p.key_id, "seal", p.t).key;
  }

  #signatureFindings(): Finding[] {
    const s = this.#signature;
    if (!s) return [];
    const out: Finding[] = [];
    const picked = pickKey(this.#keys, s.keyId, "bundle", this.#head?.exported_ms ?? 0);
    // Without a head, the export time is unknown: only whether a pinned key has the id counts.
    const refusal = this.#head || picked.refusal?.code === "SERVER_KEY_UNKNOWN" ? picked.refusal : null;
    if (refusal) out.push(finding(refusal.code, "unverifiable", "bundle", refusal.message));
    if (picked.key && !s.valid(picked.key)) {
      out.unshift(finding("SERVER_SIG_INVALID", "tamper", "bundle", "The server's signature does not match the bundle's contents."));
    }
    return out;
  }

  #lockFindings(summary: VerifyResult["summary"]): Finding[] {
    const run = this.#head!.run;
    const n = this.#count;
    const locks = verifyLocks(this.#locks, {
      ...(this.#lockSignatures ? { signatures: this.#lockSignatures } : {}),
      chainId: run.id,
      frameCount: n,
      frameHash: (index) => this.#hashAt(index),
      genesis: genesisHash(run.id),
      hostKey: this.#hostKey,
      serverKey: (p) => pickKey(this.#keys, p.key_id, "seal", p.t),
      hostId: run.host,
      parsed: this.#parsedLocks,
    });
    summary.lockedFrames = locks.lockedCount;
    summary.finalLocked = locks.finalLocked;
    return lockFindings(locks, n, (seq) => this.#broke(seq));
  }

  #derivedGaps(): Gap[] {
    this.#derived ??= tallyGaps(this.#tally);
    return this.#derived;
  }

  #gapFindings(): Finding[] {
    const out: Finding[] = [];
    for (const gap of this.#derivedGaps()) {
      const key = gapKey(gap);
      if (!this.#listed.has(key)) {
        const at = gap.seq !== undefined ? ` at frame ${gap.seq}` : "";
        out.push(
          finding("GAP_LIST_MISMATCH", "tamper", "gap list", `The chain shows a ${gap.kind} gap${at} that the bundle does not list.`),
        );
        continue;
      }
      const bodies = this.#listed.get(key)!;
      if (gap.bodies && !gap.bodies.every((b) => bodies.has(b))) {
        out.push(
          finding("GAP_LIST_MISMATCH", "tamper", "gap list", `The ${gap.kind} gap does not name every body the chain shows missing.`),
        );
      }
    }
    out.push(...this.#extraGaps);
    if (this.#gapCount > 0) {
      const kinds = this.#gapKinds.map((g) => g.kind).join(", ");
      out.push(
        finding("GAPS", "incomplete", "gap list", `The record has ${this.#gapCount} gap${this.#gapCount === 1 ? "" : "s"} (${kinds}).`),
      );
    }
    return out;
  }

  #assessFindings(): Finding[] {
    const out: Finding[] = [];
    const end = this.#end!;
    const derived = assessBundle(this.#head!.run, this.#tally, this.#gapKinds);
    if (JSON.stringify(derived.coverage) !== JSON.stringify(end.coverage)) {
      out.push(finding("COVERAGE_MISMATCH", "tamper", "coverage", "The coverage facts do not match what the chain holds."));
    }
    if (derived.tier.value !== end.tier.value) {
      out.push(
        finding("TIER_MISMATCH", "tamper", "tier", `The bundle says tier ${end.tier.value}; the chain supports ${derived.tier.value}.`),
      );
    }
    if (derived.grade.value !== end.grade.value) {
      out.push(
        finding(
          "GRADE_MISMATCH",
          "tamper",
          "grade",
          `The bundle says grade ${end.grade.value}; the chain supports ${derived.grade.value}.`,
        ),
      );
    }
    return out;
  }

  #checkBody(mention: BodyMention): void {
    const lookup = this.#options.body;
    if (!lookup) return;
    let body = this.#bodyCache.get(mention.sha256);
    if (body === undefined) {
      const bytes = lookup(mention.sha256);
      body = bytes ? { size: bytes.length, hashOk: bytesToHex(sha256(bytes)) === mention.sha256 } : null;
      if (bytes) this.#bodiesChecked++;
      if (this.#bodyCache.size >= BODY_CACHE) this.#bodyCache.clear();
      this.#bodyCache.set(mention.sha256, body);
    }
    const where = `body ${mention.sha256}`;
    if (!body)
      this.#bodies.push(
        finding("BODY_MISSING", "incomplete", where, `Frame ${mention.seq}'s ${mention.role} body is not in the bodies folder.`),
      );
    else if (!body.hashOk || body.size !== mention.size) {
      this.#bodies.push(
        finding("BODY_HASH_MISMATCH", "tamper", where, `Frame ${mention.seq}'s ${mention.role} body does not match its hash or size.`),
      );
    }
  }
}

function safeParseLock(lock: SignedLock): LockPayload | null {
  try {
    return parseLock(lock);
  } catch {
    return null;
  }
}

function sameRunId(host: string, harness: string, session: string, chainId: string): boolean {
  try {
    return runIdFor(host, harness, session) === chainId;
  } catch {
    // A string with a lone surrogate has no UTF-8 form, so no run id derives from it.
    return false;
  }
}
