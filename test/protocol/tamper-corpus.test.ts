import { describe, expect, it } from "vitest";
import { verifyBundle } from "../../protocol/index.ts";
import { SERVER_PUBLIC } from "../support/sample-run.ts";
import { SAMPLE, TAMPER_CASES } from "../support/tamper-cases.ts";

describe("tamper corpus (record-integrity.md section 4)", () => {
  it.each(TAMPER_CASES.map((c) => [c.ref ? `#${c.ref} ${c.name}` : c.name, c] as const))("%s", (_name, c) => {
    const result = verifyBundle(c.bundle(), { serverKey: SERVER_PUBLIC, ...(c.expectHead ? { expectHead: c.expectHead } : {}) });
    expect(result.exit).toBe(c.exit);
    if (c.code) expect(result.findings.map((f) => f.code)).toContain(c.code);
    else expect(result.findings.filter((f) => f.severity !== "note")).toEqual([]);
  });

  it("names the first broken seq", () => {
    const edited = TAMPER_CASES.find((c) => c.name === "one payload byte changed, bundle re-signed")!;
    expect(verifyBundle(edited.bundle(), { serverKey: SERVER_PUBLIC }).firstBrokenSeq).toBe(4);
  });

  it("goes on after the first problem: several edits give several findings", () => {
    const m = JSON.parse(JSON.stringify(SAMPLE.manifest));
    m.frames[1].hash = "0".repeat(64);
    m.locks[1].sig = "0".repeat(128);
    const result = verifyBundle(`${SAMPLE.bundle.slice(0, 0)}${JSON.stringify(m)}`, { serverKey: SERVER_PUBLIC });
    expect(result.exit).toBe(2);
    const bad = SAMPLE.bundle.replace(SAMPLE.frames[1]!.hash, "0".repeat(64)).replace(SAMPLE.locks[1]!.sig, "0".repeat(128));
    const codes = verifyBundle(bad, { serverKey: SERVER_PUBLIC }).findings.map((f) => f.code);
    expect(codes).toEqual(expect.arrayContaining(["SERVER_SIG_INVALID", "FRAME_HASH_MISMATCH", "LOCK_SIG_INVALID"]));
  });

  it("checks bodies against their hashes", () => {
    const bodies = new Map(Object.entries(SAMPLE.bodies).map(([k, v]) => [k, new TextEncoder().encode(v)]));
    const ok = verifyBundle(SAMPLE.bundle, { serverKey: SERVER_PUBLIC, body: (sha) => bodies.get(sha) ?? null });
    expect(ok.exit).toBe(0);
    expect(ok.summary.bodiesChecked).toBeGreaterThan(0);
    const [first] = bodies.keys();
    bodies.set(first!, new TextEncoder().encode("something else"));
    const bad = verifyBundle(SAMPLE.bundle, { serverKey: SERVER_PUBLIC, body: (sha) => bodies.get(sha) ?? null });
    expect(bad.exit).toBe(1);
    expect(bad.findings.map((f) => f.code)).toContain("BODY_HASH_MISMATCH");
    bodies.delete(first!);
    const missing = verifyBundle(SAMPLE.bundle, { serverKey: SERVER_PUBLIC, body: (sha) => bodies.get(sha) ?? null });
    expect(missing.exit).toBe(3);
    expect(missing.findings.map((f) => f.code)).toContain("BODY_MISSING");
  });

  it("refuses an unusable pinned key with exit 2", () => {
    expect(verifyBundle(SAMPLE.bundle, { serverKey: new Uint8Array(31) }).exit).toBe(2);
    expect(verifyBundle(SAMPLE.bundle, { serverKey: new Uint8Array(32).fill(0) }).exit).toBe(2);
  });
});
