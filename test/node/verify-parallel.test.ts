import { describe, expect, it } from "vitest";
import { bytesSource, type FrameChecker, localChecker, utf8, verifySource } from "../../protocol/index.ts";
import { type ParallelChecker, parallelChecker } from "../../collector/commands/verify/parallel.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import { bundleLines, signBundleLines } from "../support/bundle-text.ts";
import { SERVER_KEY_ID, SERVER_PUBLIC, SERVER_SECRET, sampleRun } from "../support/sample-run.ts";

/** The checker with its submit wrapped, every other member its own. */
function withSubmit(checker: ParallelChecker, submit: FrameChecker["submit"]): FrameChecker {
  return {
    slots: checker.slots,
    start: () => checker.start(),
    submit,
    free: (slot) => checker.free(slot),
    next: (wait) => checker.next(wait),
    lockSignatures: (jobs) => checker.lockSignatures(jobs),
    lockSignatureAnswers: () => checker.lockSignatureAnswers(),
  };
}

describe("verify with the frame lines shared with a second thread", () => {
  useNodeCrypto();
  const run = sampleRun({ lockEvery: 100, extraToolCalls: 4000 });
  const clean = utf8(run.bundle);
  const m = run.manifest;
  const lines = bundleLines(run.bundle);
  const at = (seq: number) => lines.findIndex((l) => l.startsWith(`{"seq":${seq},`));
  const edited = [...lines];
  edited[at(4321)] = edited[at(4321)]!.replace(m.frames[4321]!.hash, "0".repeat(64));
  edited[at(77)] = edited[at(77)]!.replace('"path":"hook"', '"path":"hooc"');
  edited[at(9000)] = edited[at(9000)]!.replace(`"kind":"${m.frames[9000]!.kind}"`, '"kind":"x\\ud800"');
  edited[at(15000)] = edited[at(15000)]!.replace(/"t":\d+/, '"t":5');
  const lock = lines.findIndex((l) => l.includes(m.locks[3]!.sig));
  edited[lock] = edited[lock]!.replace(m.locks[3]!.sig, `${m.locks[3]!.sig.slice(0, -1)}${m.locks[3]!.sig.endsWith("0") ? "1" : "0"}`);
  const tampered = utf8(signBundleLines(edited, SERVER_SECRET, SERVER_KEY_ID));
  const malformed = utf8(
    signBundleLines(
      lines.map((l, i) => (i === at(12000) ? l.replace('{"seq":12000,', '{"seq": 12000,') : l)),
      SERVER_SECRET,
      SERVER_KEY_ID,
    ),
  );

  const verify = (bytes: Uint8Array, checker: FrameChecker) =>
    verifySource(bytesSource(bytes), { serverKey: SERVER_PUBLIC, body: () => null }, checker);

  it.each([
    ["clean", clean],
    ["tampered in several places", tampered],
    ["with a malformed frame line", malformed],
  ])("decides as one thread does on a bundle %s, with both threads checking blocks", (_name, bytes) => {
    expect(bytes.length).toBeGreaterThan(3 * 2 * 1024 * 1024);
    const single = verify(bytes, localChecker());
    const checker = parallelChecker();
    // The first block waits for the worker to take it: both threads then check some.
    checker.ready();
    let first = true;
    const shared = verify(
      bytes,
      withSubmit(checker, (slot, start, end, job) => {
        checker.submit(slot, start, end, job);
        if (first) checker.taken(slot);
        first = false;
      }),
    );
    checker.close();
    expect(shared).toEqual(single);
    expect(checker.checked.here).toBeGreaterThan(0);
    expect(checker.checked.worker).toBeGreaterThan(0);
    if (bytes === tampered) {
      expect(single.findings.map((f) => `${f.code} ${f.where}`)).toEqual(
        expect.arrayContaining([
          "FRAME_HASH_MISMATCH frame 77",
          "FRAME_HASH_MISMATCH frame 4321",
          "FRAME_HASH_MISMATCH frame 4322",
          "FRAME_INVALID frame 9000",
          "TIME_REGRESSION frame 15000",
          "LOCK_SIG_INVALID lock 3",
        ]),
      );
    }
  });

  it("finishes on its own, with the same answer, when the worker stops answering", () => {
    const checker = parallelChecker({ waitLimitMs: 200 });
    let submits = 0;
    const stopping = withSubmit(checker, (slot, start, end, job) => {
      // The worker is stopped while it may hold a block: the main thread waits for it, then gives up on it.
      if (++submits === 3) checker.close();
      checker.submit(slot, start, end, job);
    });
    const result = verify(tampered, stopping);
    checker.close();
    expect(result).toEqual(verify(tampered, localChecker()));
  });
});
