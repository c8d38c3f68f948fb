import { describe, expect, it } from "vitest";
import { type FrameSlice, verifyBundle } from "../../protocol/index.ts";
import { startParallelVerify } from "../../collector/commands/verify/parallel.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import { SERVER_PUBLIC, sampleRun } from "../support/sample-run.ts";

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

describe("verify with the work shared with a second thread", () => {
  useNodeCrypto();
  const run = sampleRun({ lockEvery: 100, extraToolCalls: 2000 });
  const clean = Buffer.from(run.bundle);
  const m = run.manifest;
  const badSig = `${m.locks[3]!.sig.slice(0, -1)}${m.locks[3]!.sig.endsWith("0") ? "1" : "0"}`;
  const tampered = Buffer.from(
    run.bundle
      .replace(m.frames[4321]!.hash, "0".repeat(64))
      .replace(m.frames[77]!.payload.replaceAll('"', '\\"'), m.frames[77]!.payload.replaceAll('"', '\\"').replace("hook", "hooc"))
      .replace(m.locks[3]!.sig, badSig),
  );
  // A kind with a lone surrogate has no UTF-8 form: such a bundle is not handed to the worker.
  const surrogate = Buffer.from(run.bundle.replace(`"kind":"${m.frames[9]!.kind}"`, `"kind":"x\\ud800"`));

  // The main thread waits before its first chunk so the worker takes some: both threads' slices
  // are used. Reports what each thread did.
  function parallel(bytes: Uint8Array, stall: number) {
    const p = startParallelVerify(bytes, SERVER_PUBLIC);
    const own = new Set<FrameSlice>();
    const used = { worker: 0, lockSignatures: false, bundleSignature: false };
    const result = verifyBundle(bytes, {
      serverKey: SERVER_PUBLIC,
      shareFrames: (manifest) => {
        const collect = p.options.shareFrames!(manifest);
        return (check) => {
          const slices = collect((from, to) => {
            if (own.size === 0) sleep(stall);
            const slice = check(from, to);
            own.add(slice);
            return slice;
          });
          used.worker = slices?.filter((s) => !own.has(s)).length ?? 0;
          return slices;
        };
      },
      lockSignatures: (locks) => {
        const valid = p.options.lockSignatures!(locks);
        used.lockSignatures = valid !== null;
        return valid;
      },
      bundleSignature: () => {
        const valid = p.options.bundleSignature!();
        used.bundleSignature = valid !== null;
        return valid;
      },
    });
    p.stop();
    return { result, ...used };
  }

  it.each([
    ["a clean bundle", clean],
    ["a tampered one", tampered],
  ])("decides %s exactly as one thread does, with the worker's answers", (_name, bytes) => {
    expect(bytes.length).toBeGreaterThan(2 * 1024 * 1024);
    const single = verifyBundle(bytes, { serverKey: SERVER_PUBLIC });
    const both = parallel(bytes, 1500);
    expect(both.worker).toBeGreaterThan(0);
    expect(both.lockSignatures).toBe(true);
    expect(both.bundleSignature).toBe(true);
    expect(both.result).toEqual(single);
  });

  it("checks a bundle it cannot hand over on this thread alone", () => {
    const single = verifyBundle(surrogate, { serverKey: SERVER_PUBLIC });
    expect(single.findings.map((f) => f.code)).toContain("FRAME_INVALID");
    const both = parallel(surrogate, 0);
    expect(both.worker).toBe(0);
    expect(both.lockSignatures).toBe(false);
    expect(both.result).toEqual(single);
  });

  it("checks what a stopped worker did not deliver", () => {
    const p = startParallelVerify(clean, SERVER_PUBLIC);
    p.stop();
    const r = verifyBundle(clean, { serverKey: SERVER_PUBLIC, ...p.options });
    expect(r).toEqual(verifyBundle(clean, { serverKey: SERVER_PUBLIC }));
  });

  it("does not trust slices that overlap or fall outside the chain", () => {
    const single = verifyBundle(tampered, { serverKey: SERVER_PUBLIC });
    const lying = (slice: FrameSlice): FrameSlice => ({ ...slice, mismatched: [] });
    const overlapping = verifyBundle(tampered, {
      serverKey: SERVER_PUBLIC,
      shareFrames: (manifest) => (check) => [check(0, manifest.frames.length), lying(check(4000, 4400))],
    });
    expect(overlapping).toEqual(single);
    const outside = verifyBundle(tampered, {
      serverKey: SERVER_PUBLIC,
      shareFrames:
        ({ frames }) =>
        (check) => [check(0, frames.length - 1), { ...check(frames.length - 1, frames.length), to: frames.length + 5 }],
    });
    expect(outside).toEqual(single);
  });

  it("puts a late server-signature answer where checking it first would", () => {
    const clean1 = verifyBundle(clean, { serverKey: SERVER_PUBLIC });
    const late = verifyBundle(clean, { serverKey: SERVER_PUBLIC, bundleSignature: () => false });
    expect(late.findings.map((f) => f.code)).toEqual(["SERVER_SIG_INVALID", ...clean1.findings.map((f) => f.code)]);
    expect(late.exit).toBe(1);
    // A manifest not in its exported form is refused before anything but the signature.
    const spaced = Buffer.from(run.bundle.replace('"frames":[', '"frames": ['));
    const r = verifyBundle(spaced, { serverKey: SERVER_PUBLIC, bundleSignature: () => false });
    expect(r.findings.map((f) => f.code)).toEqual(["SERVER_SIG_INVALID", "MANIFEST_INVALID"]);
    expect(r).toEqual(verifyBundle(spaced, { serverKey: SERVER_PUBLIC }));
  });

  // An edited recorded hash breaks its own frame and, because it links the next one, that one too.
  it("found the edits", () => {
    const r = verifyBundle(tampered, { serverKey: SERVER_PUBLIC });
    expect(r.findings.filter((f) => f.code === "FRAME_HASH_MISMATCH").map((f) => f.where)).toEqual([
      "frame 77",
      "frame 4321",
      "frame 4322",
    ]);
    expect(r.findings.filter((f) => f.code === "LOCK_SIG_INVALID").map((f) => f.where)).toEqual(["lock 3"]);
  });
});
