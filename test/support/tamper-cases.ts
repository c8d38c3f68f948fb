// The tamper corpus: each tamper case of the team's record-integrity research that applies to our
// format (`ref` keeps that list's numbers; the notes are not in this repository), as a mutation of
// the sample bundle with the exit code and finding it must give, in each bundle layout it applies
// to (version 2, which the server writes, and version 1).
import {
  assembleManifest,
  bytesToHex,
  ChainWriter,
  fromHex,
  LOCK_PAYLOAD_TYPE,
  lockHash,
  pae,
  publicKeyOf,
  sign,
  signLock,
  utf8,
  writeBundle,
  type Manifest,
} from "../../protocol/index.ts";
import { bundleLines, signBundleLines, writeBundleV1, writeBundleV1Text } from "./bundle-text.ts";
import { HOST_SECRET, SERVER_KEY_ID, SERVER_SECRET, type SampleOptions, type SampleRun, sampleRun } from "./sample-run.ts";

/** A bundle layout. */
export type Layout = 1 | 2;

const flipHex = (hex: string, at: number) => hex.slice(0, at) + (parseInt(hex[at]!, 16) ^ 1).toString(16) + hex.slice(at + 1);
/** The line of frame `seq` in the sample's version-2 lines, and the hash it carries. */
const frameAt = (l: string[], seq: number) => l.findIndex((x) => x.startsWith(`{"seq":${seq},`));
const SAMPLE_HASH = (l: string[], seq: number) => (JSON.parse(l[frameAt(l, seq)]!) as { hash: string }).hash;

export interface TamperCase {
  name: string;
  /** The numbered case in record-integrity.md section 4, where there is one. */
  ref?: number;
  /** The bundle in a layout, or null when the case does not apply to it. */
  bundle: (layout: Layout) => string | null;
  exit: 0 | 1 | 2 | 3;
  code: string;
  expectHead?: string;
  /** The record as a server would have received it, where the case edits the record (not only its bundle). */
  received?: () => Received;
}

/** A case's record as the computer would have sent it to a server: its frames and locks. */
export interface Received {
  frames: Manifest["frames"];
  locks: Manifest["locks"];
}

/**
 * The corpus made from the sample run of `options` (the RFC 8032 test host's by default, whose
 * bundles the verifier tests read): each case as bundles, and for a case that edits the record
 * itself (its frames or locks, not only the bundle) the record as a server would receive it, so
 * the server's lock intake is run on the same cases as the verifier (test/workers/lock-intake.test.ts).
 */
export function tamperCorpus(options: SampleOptions = {}): { sample: SampleRun; cases: TamperCase[] } {
  const base = sampleRun({ lockEvery: 3, ...options });
  const secret = options.host?.secret ?? HOST_SECRET;
  const clone = (): Manifest => JSON.parse(JSON.stringify(base.manifest)) as Manifest;
  const write = (m: Manifest, layout: Layout, key = SERVER_SECRET, keyId = SERVER_KEY_ID) =>
    layout === 1 ? writeBundleV1(m, key, keyId) : writeBundle(m, key, keyId);
  const edit = (fn: (m: Manifest) => void) => ({
    bundle: (layout: Layout) => {
      const m = clone();
      fn(m);
      return write(m, layout);
    },
    received: (): Received => {
      const m = clone();
      fn(m);
      return { frames: m.frames, locks: m.locks };
    },
  });
  /** Rebuilds the manifest the way an honest server would (derived gaps, coverage, tier, grade). */
  const rebuild = (frames: Manifest["frames"], locks: Manifest["locks"]) => ({
    bundle: (layout: Layout) =>
      write(
        assembleManifest({
          run: base.manifest.run,
          exportedMs: base.manifest.exported_ms,
          serverKeyId: SERVER_KEY_ID,
          hostKey: publicKeyOf(secret),
          frames,
          locks,
          equivocations: [],
          serverGaps: [],
        }),
        layout,
      ),
    received: (): Received => ({ frames, locks }),
  });
  /** A version-2 bundle whose lines are edited as text, then signed again. */
  const lines = (fn: (lines: string[]) => void) => (layout: Layout) => {
    if (layout !== 2) return null;
    const l = bundleLines(base.bundle);
    fn(l);
    return signBundleLines(l, SERVER_SECRET, SERVER_KEY_ID);
  };
  const only = (layout: Layout, fn: () => string) => (l: Layout) => (l === layout ? fn() : null);
  const both = (fn: (bundle: string) => string) => (layout: Layout) => fn(layout === 1 ? base.bundleV1 : base.bundle);
  const hostLock = (fields: Partial<Parameters<typeof signLock>[0]>, at = 0) => {
    const p = JSON.parse(base.locks[at]!.payload);
    const { v: _v, key_id: _k, ...rest } = p;
    return { ...signLock({ ...rest, ...fields }, secret), received_ms: base.locks[at]!.received_ms };
  };
  /** Cases of the version-2 layout only: its lines, their order and their exact form. */
  const V2_CASES: TamperCase[] = [
    {
      name: "white space in a frame line, re-signed",
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: lines((l) => {
        l[frameAt(l, 3)] = l[frameAt(l, 3)]!.replace('{"seq":3,', '{"seq": 3,');
      }),
    },
    {
      name: "a frame's kind written with an escape, re-signed",
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: lines((l) => {
        l[frameAt(l, 0)] = l[frameAt(l, 0)]!.replace('"kind":"agent_start"', '"kind":"agent\\u005fstart"');
      }),
    },
    {
      name: "uppercase hex in a frame's hash, re-signed",
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: lines((l) => {
        const hash = SAMPLE_HASH(l, 5);
        l[frameAt(l, 5)] = l[frameAt(l, 5)]!.replace(hash, hash.toUpperCase());
      }),
    },
    {
      name: "payload rewritten with white space, re-signed",
      exit: 1,
      code: "FRAME_INVALID",
      bundle: lines((l) => {
        l[frameAt(l, 4)] = l[frameAt(l, 4)]!.replace('"payload":{"path":"hook"', '"payload":{"path": "hook"');
      }),
    },
    {
      name: "payload that is not JSON, re-signed",
      exit: 1,
      code: "FRAME_INVALID",
      bundle: lines((l) => {
        l[frameAt(l, 2)] = l[frameAt(l, 2)]!.replace(/"payload":.*$/, '"payload":{"path":}');
      }),
    },
    {
      name: "a lock line moved after the frames, re-signed",
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: lines((l) => {
        const [lock] = l.splice(1, 1);
        l.splice(-1, 0, lock!);
      }),
    },
    {
      name: "end line removed, re-signed",
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: lines((l) => {
        l.pop();
      }),
    },
    {
      name: "end line twice, re-signed",
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: lines((l) => {
        l.push(l.at(-1)!);
      }),
    },
    {
      name: "lines ending with CR LF, re-signed",
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: lines((l) => {
        for (let i = 0; i < l.length; i++) l[i] = `${l[i]}\r`;
      }),
    },
    {
      name: "gap_bodies after a gap that names no bodies, re-signed",
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: lines((l) => {
        l.splice(
          -1,
          0,
          JSON.stringify({ gap: { kind: "daemon_down", source: "server", detail: "x" } }),
          JSON.stringify({ gap_bodies: ["a".repeat(64)] }),
        );
      }),
    },
    { name: "no LF after the signature line", exit: 0, code: "", bundle: only(2, () => base.bundle.replace(/\n$/, "")) },
    {
      name: "cut off before the signature line (a truncated download)",
      exit: 2,
      code: "BUNDLE_LAYOUT",
      bundle: only(2, () => base.bundle.slice(0, base.bundle.lastIndexOf('{"seq":'))),
    },
    {
      name: "a line longer than 1 MiB, re-signed",
      exit: 2,
      code: "BUNDLE_LAYOUT",
      bundle: lines((l) => {
        l[frameAt(l, 8)] = l[frameAt(l, 8)]!.replace('"path":"hook"', `"path":"hook","pad":"${"x".repeat(1 << 20)}"`);
      }),
    },
  ];

  const cases: TamperCase[] = [
    { name: "untouched sample", bundle: both((b) => b), exit: 0, code: "" },
    {
      name: "one payload byte changed, bundle re-signed",
      ref: 1,
      exit: 1,
      code: "FRAME_HASH_MISMATCH",
      ...edit((m) => {
        m.frames[4]!.payload = m.frames[4]!.payload.replace("run_shell", "run_shelL");
      }),
    },
    {
      name: "one payload byte changed, not re-signed",
      ref: 32,
      exit: 1,
      code: "SERVER_SIG_INVALID",
      bundle: (layout) =>
        layout === 1 ? base.bundleV1.replace('\\"run_shell\\"', '\\"run_shelL\\"') : base.bundle.replace('"run_shell"', '"run_shelL"'),
    },
    {
      name: "payload replaced by other valid JSON of the same length",
      ref: 2,
      exit: 1,
      code: "FRAME_HASH_MISMATCH",
      ...edit((m) => {
        m.frames[8]!.payload = m.frames[8]!.payload.replace("session_end", "session_xyz");
      }),
    },
    {
      name: "frame kind changed",
      ref: 3,
      exit: 1,
      code: "FRAME_HASH_MISMATCH",
      ...edit((m) => {
        m.frames[6]!.kind = "file_io";
      }),
    },
    {
      name: "frame time changed",
      ref: 3,
      exit: 1,
      code: "FRAME_HASH_MISMATCH",
      ...edit((m) => {
        m.frames[2]!.t += 1;
      }),
    },
    {
      name: "recorded hash edited, content unchanged",
      ref: 5,
      exit: 1,
      code: "FRAME_HASH_MISMATCH",
      ...edit((m) => {
        m.frames[1]!.hash = flipHex(m.frames[1]!.hash, 5);
      }),
    },
    {
      name: "middle frame deleted, seqs renumbered",
      ref: 6,
      exit: 1,
      code: "FRAME_HASH_MISMATCH",
      ...edit((m) => {
        m.frames.splice(4, 1);
        m.frames.forEach((f, i) => {
          f.seq = i;
        });
      }),
    },
    {
      name: "middle frame deleted, seqs kept",
      ref: 7,
      exit: 1,
      code: "SEQ_GAP",
      ...edit((m) => {
        m.frames.splice(4, 1);
      }),
    },
    {
      name: "two frames swapped",
      ref: 8,
      exit: 1,
      code: "SEQ_ORDER",
      ...edit((m) => {
        const a = m.frames[3]!;
        m.frames[3] = m.frames[4]!;
        m.frames[4] = a;
      }),
    },
    {
      name: "frame duplicated",
      ref: 9,
      exit: 1,
      code: "SEQ_DUPLICATE",
      ...edit((m) => {
        m.frames.splice(3, 0, m.frames[3]!);
      }),
    },
    {
      name: "frame inserted between locked frames",
      ref: 10,
      exit: 1,
      code: "LOCK_HEAD_MISMATCH",
      ...(() => {
        const w = new ChainWriter(base.chain);
        const frames: Manifest["frames"] = [];
        base.frames.forEach((f, i) => {
          const a = w.append(f.kind as never, JSON.parse(f.payload) as never, f.t);
          frames.push({ ...a.frame, hash: a.hash });
          if (i === 1) {
            const b = w.append("subagent_start", { path: "hook" }, f.t);
            frames.push({ ...b.frame, hash: b.hash });
          }
        });
        return rebuild(frames, base.locks);
      })(),
    },
    {
      name: "tail and trailing locks cut off, re-signed (truncation)",
      ref: 12,
      exit: 3,
      code: "NOT_FINAL_LOCKED",
      ...rebuild(base.frames.slice(0, 6), base.locks.slice(0, 2)),
    },
    {
      name: "truncation caught by --expect-head",
      ref: 45,
      exit: 1,
      code: "EXPECTED_HEAD_MISMATCH",
      ...rebuild(base.frames.slice(0, 6), base.locks.slice(0, 2)),
      expectHead: base.frames.at(-1)!.hash,
    },
    {
      name: "final lock removed",
      ref: 13,
      exit: 3,
      code: "NOT_FINAL_LOCKED",
      ...edit((m) => {
        m.locks.pop();
      }),
    },
    {
      name: "frame appended after the final lock",
      ref: 14,
      exit: 1,
      code: "FRAMES_AFTER_FINAL",
      ...(() => {
        const w = new ChainWriter({
          chain: base.chain,
          count: base.frames.length,
          head: base.frames.at(-1)!.hash,
          lockSeq: 99,
          lastLockHash: null,
          lockedCount: 0,
          final: false,
        });
        const a = w.append("turn_start", { path: "hook", prompt: { sha256: "0".repeat(64), size: 0 } }, base.frames.at(-1)!.t + 1);
        return rebuild([...base.frames, { ...a.frame, hash: a.hash }], base.locks);
      })(),
    },
    {
      name: "chain recomputed with other content, old locks kept",
      ref: 15,
      exit: 1,
      code: "LOCK_HEAD_MISMATCH",
      ...(() => {
        const w = new ChainWriter(base.chain);
        const frames = base.frames.map((f) => {
          const p = JSON.parse(f.payload);
          if (f.kind === "tool_call") p.exit_code = 1;
          const a = w.append(f.kind as never, p as never, f.t);
          return { ...a.frame, hash: a.hash };
        });
        return rebuild(frames, base.locks);
      })(),
    },
    {
      name: "chain re-locked with another host key",
      ref: 16,
      exit: 1,
      code: "LOCK_SIG_INVALID",
      ...edit((m) => {
        const other = fromHex("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7", 32);
        m.locks[0] = { ...m.locks[0]!, sig: bytesToHex(sign(other, pae(LOCK_PAYLOAD_TYPE, utf8(m.locks[0]!.payload)))) };
      }),
    },
    {
      name: "lock signature bit flipped",
      ref: 17,
      exit: 1,
      code: "LOCK_SIG_INVALID",
      ...edit((m) => {
        m.locks[1]!.sig = flipHex(m.locks[1]!.sig, 10);
      }),
    },
    {
      name: "lock count edited",
      ref: 18,
      exit: 1,
      code: "LOCK_SIG_INVALID",
      ...edit((m) => {
        m.locks[0]!.payload = m.locks[0]!.payload.replace('"count":3', '"count":4');
      }),
    },
    {
      name: "lock from another run inserted",
      ref: 19,
      exit: 1,
      code: "LOCK_CHAIN_MISMATCH",
      ...edit((m) => {
        m.locks[1] = hostLock({ chain: "run_00000000000000000000000000000000" }, 1);
      }),
    },
    {
      name: "lock replayed",
      ref: 20,
      exit: 1,
      code: "LOCK_SEQ_DUPLICATE",
      ...edit((m) => {
        m.locks.splice(1, 0, m.locks[0]!);
      }),
    },
    {
      name: "two locks swapped",
      ref: 21,
      exit: 1,
      code: "LOCK_CHAIN_BREAK",
      ...edit((m) => {
        const a = m.locks[0]!;
        m.locks[0] = m.locks[1]!;
        m.locks[1] = a;
      }),
    },
    {
      name: "middle lock removed",
      ref: 22,
      exit: 1,
      code: "LOCK_SEQ_GAP",
      ...edit((m) => {
        m.locks.splice(1, 1);
      }),
    },
    {
      name: "second valid lock for the same lock_seq",
      ref: 23,
      exit: 1,
      code: "LOCK_SEQ_DUPLICATE",
      ...edit((m) => {
        m.locks.splice(1, 0, hostLock({ t: 1 }, 0));
      }),
    },
    {
      name: "lock count going back",
      ref: 24,
      exit: 1,
      code: "LOCK_REGRESSION",
      ...edit((m) => {
        const prev = m.locks[0]!;
        m.locks[1] = hostLock({ lock_seq: 1, count: 2, head: m.frames[1]!.hash, prev_lock: lockHash(prev) }, 1);
      }),
    },
    {
      name: "lock head past the exported frames",
      ref: 25,
      exit: 1,
      code: "LOCK_HEAD_MISMATCH",
      ...edit((m) => {
        m.frames.splice(7);
        m.frames.forEach(() => {});
      }),
    },
    {
      name: "lock signed under another payload type",
      ref: 26,
      exit: 1,
      code: "LOCK_SIG_INVALID",
      ...edit((m) => {
        m.locks[0]!.sig = bytesToHex(sign(secret, pae("application/vnd.oxagen.bundle.v1+json", utf8(m.locks[0]!.payload))));
      }),
    },
    {
      name: "lock signed over the raw payload, not PAE",
      ref: 27,
      exit: 1,
      code: "LOCK_SIG_INVALID",
      ...edit((m) => {
        m.locks[0]!.sig = bytesToHex(sign(secret, utf8(m.locks[0]!.payload)));
      }),
    },
    {
      name: "lock signature truncated to 63 bytes",
      ref: 28,
      exit: 2,
      code: "MANIFEST_INVALID",
      ...edit((m) => {
        m.locks[0]!.sig = m.locks[0]!.sig.slice(0, 126);
      }),
    },
    {
      name: "malleable lock signature (S + L)",
      ref: 29,
      exit: 1,
      code: "LOCK_SIG_INVALID",
      ...edit((m) => {
        const sig = fromHex(m.locks[0]!.sig, 64);
        const L = 2n ** 252n + 27742317777372353535851937790883648493n;
        let s = 0n;
        for (let i = 31; i >= 0; i--) s = (s << 8n) | BigInt(sig[32 + i]!);
        s += L;
        for (let i = 0; i < 32; i++) {
          sig[32 + i] = Number(s & 0xffn);
          s >>= 8n;
        }
        m.locks[0]!.sig = bytesToHex(sig);
      }),
    },
    {
      name: "small-order host key",
      ref: 30,
      exit: 1,
      code: "HOST_KEY_INVALID",
      ...edit((m) => {
        m.host_key.pub = "0100000000000000000000000000000000000000000000000000000000000000";
      }),
    },
    {
      name: "host key id hint altered",
      ref: 31,
      exit: 1,
      code: "HOST_KEY_INVALID",
      ...edit((m) => {
        m.host_key.key_id = "0011223344556677";
      }),
    },
    {
      // No pinned key has the signature's key id: it cannot be checked (exit 2, not 1).
      name: "signed by a key that is not pinned",
      ref: 33,
      exit: 2,
      code: "SERVER_KEY_UNKNOWN",
      bundle: (layout) => {
        const m = clone();
        m.server_key_id = "0011223344556677";
        return write(m, layout, secret, "0011223344556677");
      },
    },
    {
      name: "signature from another key under the pinned key id",
      ref: 33,
      exit: 1,
      code: "SERVER_SIG_INVALID",
      bundle: (layout) => write(base.manifest, layout, secret),
    },
    {
      name: "payload type swapped",
      ref: 34,
      exit: 2,
      code: "UNSUPPORTED_VERSION",
      bundle: both((b) => b.replace(/application\/vnd\.oxagen\.bundle\.v[12]\+jsonl?/, "application/vnd.oxagen.lock.v1+json")),
    },
    {
      name: "unknown bundle version",
      ref: 35,
      exit: 2,
      code: "UNSUPPORTED_VERSION",
      bundle: both((b) => b.replace(/^\{"oxagen_bundle":[12]/, '{"oxagen_bundle":3')),
    },
    {
      name: "unknown manifest version, re-signed",
      ref: 35,
      exit: 2,
      code: "UNSUPPORTED_VERSION",
      bundle: (layout) =>
        layout === 1
          ? edit((m) => {
              (m as { v: number }).v = 2;
            }).bundle(1)
          : null,
    },
    {
      name: "duplicate member in the manifest, re-signed",
      ref: 36,
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: (layout) =>
        layout === 1
          ? writeBundleV1Text(JSON.stringify(base.manifest).replace('"v":1,', '"v":1,"v":1,'), SERVER_SECRET, SERVER_KEY_ID)
          : lines((l) => {
              l[0] = l[0]!.replace('"exported_ms":', '"exported_ms":1,"exported_ms":');
            })(layout),
    },
    {
      name: "duplicate member in a lock payload",
      ref: 36,
      exit: 1,
      code: "LOCK_FORMAT_INVALID",
      ...edit((m) => {
        m.locks[0]!.payload = m.locks[0]!.payload.replace('"v":1,', '"v":1,"v":1,');
      }),
    },
    {
      name: "unknown field in the manifest",
      ref: 37,
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: (layout) =>
        layout === 1
          ? edit((m) => {
              (m as Record<string, unknown>).extra = 1;
            }).bundle(1)
          : lines((l) => {
              l[0] = l[0]!.replace(/\}$/, ',"extra":1}');
            })(layout),
    },
    {
      name: "unknown field in a lock payload",
      ref: 37,
      exit: 1,
      code: "LOCK_FORMAT_INVALID",
      ...edit((m) => {
        m.locks[0]!.payload = m.locks[0]!.payload.replace('"v":1,', '"v":1,"x":1,');
      }),
    },
    {
      name: "uppercase hex in a signature",
      ref: 38,
      exit: 2,
      code: "MANIFEST_INVALID",
      ...edit((m) => {
        m.locks[0]!.sig = m.locks[0]!.sig.toUpperCase();
      }),
    },
    { name: "trailing bytes after the document", ref: 39, exit: 2, code: "BUNDLE_LAYOUT", bundle: both((b) => `${b}{}`) },
    { name: "leading byte-order mark", ref: 40, exit: 2, code: "BUNDLE_LAYOUT", bundle: both((b) => `\ufeff${b}`) },
    {
      name: "lone surrogate in a payload",
      ref: 40,
      exit: 1,
      code: "FRAME_INVALID",
      ...edit((m) => {
        m.frames[0]!.payload = m.frames[0]!.payload.replace('"/work"', '"/work\\ud800"');
      }),
    },
    {
      name: "run id differs from the chain the locks name",
      ref: 41,
      exit: 1,
      code: "LOCK_CHAIN_MISMATCH",
      ...edit((m) => {
        m.run.id = "run_00000000000000000000000000000000";
      }),
    },
    {
      name: "session id changed, so the run id no longer derives from it",
      ref: 41,
      exit: 1,
      code: "RUN_ID_MISMATCH",
      ...edit((m) => {
        m.run.session_id = "another-session";
      }),
    },
    {
      name: "lone surrogate in the session id (no run id derives from it)",
      exit: 1,
      code: "RUN_ID_MISMATCH",
      ...edit((m) => {
        m.run.session_id = "my-run-42\ud800";
      }),
    },
    {
      name: "lock names another host",
      exit: 1,
      code: "LOCK_HOST_MISMATCH",
      ...edit((m) => {
        m.locks[1] = hostLock({ host: "h-other" }, 1);
      }),
    },
    {
      name: "gap removed from the list",
      exit: 1,
      code: "GAP_LIST_MISMATCH",
      ...(() => {
        const w = new ChainWriter(base.chain);
        const frames = base.frames.slice(0, -1).map((f) => {
          const a = w.append(f.kind as never, JSON.parse(f.payload) as never, f.t);
          return { ...a.frame, hash: a.hash };
        });
        return {
          received: (): Received => ({ frames, locks: [] }),
          bundle: (layout: Layout) => {
            const run = { ...base.manifest.run, status: "crashed" as const, outcome: "crashed" };
            const m = assembleManifest({
              run,
              exportedMs: 1,
              serverKeyId: SERVER_KEY_ID,
              hostKey: publicKeyOf(secret),
              frames,
              locks: [],
              equivocations: [],
              serverGaps: [],
            });
            m.gaps = [];
            return write(m, layout);
          },
        };
      })(),
    },
    {
      name: "computer gap listed that the chain does not show",
      exit: 1,
      code: "GAP_LIST_MISMATCH",
      ...edit((m) => {
        m.gaps.push({ kind: "daemon_down", source: "computer", seq: 3, detail: "x" });
      }),
    },
    {
      name: "tier raised",
      exit: 1,
      code: "TIER_MISMATCH",
      ...edit((m) => {
        m.tier.value = "contained";
      }),
    },
    {
      name: "grade raised",
      exit: 1,
      code: "GRADE_MISMATCH",
      ...edit((m) => {
        m.grade.value = "retry";
      }),
    },
    {
      name: "coverage facts edited",
      exit: 1,
      code: "COVERAGE_MISMATCH",
      ...edit((m) => {
        m.coverage.llm_calls_gateway = 5;
      }),
    },
    { name: "not JSON at all", ref: 46, exit: 2, code: "BUNDLE_LAYOUT", bundle: only(1, () => "\u0000\u0001garbage") },
    {
      name: "deeply nested manifest",
      ref: 46,
      exit: 2,
      code: "MANIFEST_INVALID",
      bundle: (layout) =>
        layout === 1
          ? writeBundleV1Text(`${"[".repeat(100_000)}${"]".repeat(100_000)}`, SERVER_SECRET, SERVER_KEY_ID)
          : lines((l) => {
              l.splice(-1, 0, `{"gap":${"[".repeat(100_000)}${"]".repeat(100_000)}}`);
            })(layout),
    },
    ...V2_CASES,
  ];
  return { sample: base, cases };
}

const DEFAULT = tamperCorpus();
/** The sample run of the default corpus. */
export const SAMPLE = DEFAULT.sample;
/** The default corpus, on the RFC 8032 test host's sample run. */
export const TAMPER_CASES = DEFAULT.cases;
