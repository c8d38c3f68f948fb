import { describe, expect, it } from "vitest";
import { verifyBundle } from "../../protocol/index.ts";
import { startFrameHashing } from "../../collector/commands/verify/parallel.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import { SERVER_PUBLIC, sampleRun } from "../support/sample-run.ts";

describe("verify with frames hashed and lock signatures checked on a second thread", () => {
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

  it.each([
    ["a clean bundle", clean],
    ["a tampered one", tampered],
  ])("decides %s exactly as one thread does", (_name, bytes) => {
    expect(bytes.length).toBeGreaterThan(2 * 1024 * 1024);
    const single = verifyBundle(bytes, { serverKey: SERVER_PUBLIC });
    const hashing = startFrameHashing(bytes, SERVER_PUBLIC);
    expect(hashing.frameHashes).toBeDefined();
    let used = false;
    let signaturesUsed = false;
    const parallel = verifyBundle(hashing.file, {
      serverKey: SERVER_PUBLIC,
      frameHashes: (chainId, frames) => {
        const hashes = hashing.frameHashes!(chainId, frames);
        used = hashes !== null;
        return hashes;
      },
      lockSignatures: (locks) => {
        const valid = hashing.lockSignatures!(locks);
        signaturesUsed = valid !== null;
        return valid;
      },
    });
    hashing.stop();
    expect(used).toBe(true);
    expect(signaturesUsed).toBe(true);
    expect(parallel).toEqual(single);
  });

  // An edited recorded hash breaks its own frame and, because it links the next one, that one too.
  it("found the edits", () => {
    const r = verifyBundle(tampered, { serverKey: SERVER_PUBLIC });
    expect(r.findings.filter((f) => f.code === "FRAME_HASH_MISMATCH").map((f) => f.where)).toEqual(["frame 77", "frame 4321", "frame 4322"]);
    expect(r.findings.filter((f) => f.code === "LOCK_SIG_INVALID").map((f) => f.where)).toEqual(["lock 3"]);
  });
});
