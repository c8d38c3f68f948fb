import { describe, expect, it } from "vitest";
import {
  bundleV2SigningInput,
  bytesToHex,
  concatBytes,
  MAX_FINDINGS_PER_CODE,
  sha256,
  sign,
  utf8,
  verifyBundle,
  writeBundle,
} from "../../protocol/index.ts";
import { bundleLines } from "../support/bundle-text.ts";
import { SERVER_KEY_ID, SERVER_PUBLIC, SERVER_SECRET, sampleRun } from "../support/sample-run.ts";
import { type Layout, SAMPLE, TAMPER_CASES } from "../support/tamper-cases.ts";

const LAYOUTS: Layout[] = [2, 1];
const cases = LAYOUTS.flatMap((layout) =>
  TAMPER_CASES.flatMap((c) => {
    const bundle = c.bundle(layout);
    return bundle === null ? [] : [[`v${layout} ${c.ref ? `#${c.ref} ` : ""}${c.name}`, c, bundle] as const];
  }),
);

describe("tamper corpus (record-integrity.md section 4), in both bundle layouts", () => {
  it.each(cases)("%s", (_name, c, bundle) => {
    const result = verifyBundle(bundle, { serverKey: SERVER_PUBLIC, ...(c.expectHead ? { expectHead: c.expectHead } : {}) });
    expect(result.exit, JSON.stringify(result.findings)).toBe(c.exit);
    if (c.code) expect(result.findings.map((f) => f.code)).toContain(c.code);
    else expect(result.findings.filter((f) => f.severity !== "note")).toEqual([]);
  });

  it("gives the same findings for the same content in either layout", () => {
    for (const c of TAMPER_CASES) {
      const [v2, v1] = [c.bundle(2), c.bundle(1)];
      if (v2 === null || v1 === null || c.exit === 2) continue;
      const options = { serverKey: SERVER_PUBLIC, ...(c.expectHead ? { expectHead: c.expectHead } : {}) };
      expect(verifyBundle(v2, options), c.name).toEqual(verifyBundle(v1, options));
    }
  });

  it("names the first broken seq", () => {
    const edited = TAMPER_CASES.find((c) => c.name === "one payload byte changed, bundle re-signed")!;
    for (const layout of LAYOUTS) expect(verifyBundle(edited.bundle(layout)!, { serverKey: SERVER_PUBLIC }).firstBrokenSeq).toBe(4);
  });

  it("goes on after the first problem: several edits give several findings", () => {
    for (const bundle of [SAMPLE.bundle, SAMPLE.bundleV1]) {
      const json = bundle === SAMPLE.bundleV1;
      const sig = SAMPLE.locks[1]!.sig;
      const bad = bundle.replace(SAMPLE.frames[1]!.hash, "0".repeat(64)).replace(sig, "0".repeat(128));
      expect(bad).not.toBe(bundle);
      const codes = verifyBundle(bad, { serverKey: SERVER_PUBLIC }).findings.map((f) => f.code);
      expect(codes, json ? "v1" : "v2").toEqual(expect.arrayContaining(["SERVER_SIG_INVALID", "FRAME_HASH_MISMATCH", "LOCK_SIG_INVALID"]));
    }
  });

  it("checks bodies against their hashes", () => {
    for (const bundle of [SAMPLE.bundle, SAMPLE.bundleV1]) {
      const bodies = new Map(Object.entries(SAMPLE.bodies).map(([k, v]) => [k, new TextEncoder().encode(v)]));
      const ok = verifyBundle(bundle, { serverKey: SERVER_PUBLIC, body: (sha) => bodies.get(sha) ?? null });
      expect(ok.exit).toBe(0);
      expect(ok.summary.bodiesChecked).toBe(bodies.size);
      const [first] = bodies.keys();
      bodies.set(first!, new TextEncoder().encode("something else"));
      const bad = verifyBundle(bundle, { serverKey: SERVER_PUBLIC, body: (sha) => bodies.get(sha) ?? null });
      expect(bad.exit).toBe(1);
      expect(bad.findings.map((f) => f.code)).toContain("BODY_HASH_MISMATCH");
      bodies.delete(first!);
      const missing = verifyBundle(bundle, { serverKey: SERVER_PUBLIC, body: (sha) => bodies.get(sha) ?? null });
      expect(missing.exit).toBe(3);
      expect(missing.findings.map((f) => f.code)).toContain("BODY_MISSING");
    }
  });

  it("refuses an unusable pinned key with exit 2", () => {
    expect(verifyBundle(SAMPLE.bundle, { serverKey: new Uint8Array(31) }).exit).toBe(2);
    expect(verifyBundle(SAMPLE.bundle, { serverKey: new Uint8Array(32).fill(0) }).exit).toBe(2);
  });

  it("refuses bytes that are not UTF-8 inside a version-2 payload (exit 2, not a tampered frame)", () => {
    const text = SAMPLE.bundle;
    const copy = utf8(text);
    copy[utf8(text.slice(0, text.indexOf('"cwd":"/work"') + 8)).length] = 0xff;
    const body = copy.subarray(0, utf8(text.slice(0, text.indexOf('{"signature"'))).length);
    const sig = bytesToHex(sign(SERVER_SECRET, bundleV2SigningInput(sha256(body))));
    const signed = concatBytes(body, utf8(`{"signature":{"key_id":"${SERVER_KEY_ID}","sig":"${sig}"}}\n`));
    const result = verifyBundle(signed, { serverKey: SERVER_PUBLIC });
    expect(result.findings.map((f) => f.code)).toEqual(["UNREADABLE"]);
    expect(result.exit).toBe(2);
  });

  it("keeps at most MAX_FINDINGS_PER_CODE findings of a code, and says how many more there are", () => {
    const run = sampleRun({ lockEvery: 1000, extraToolCalls: 2550 });
    const m = JSON.parse(JSON.stringify(run.manifest)) as typeof run.manifest;
    // Another run id: every frame's hash covers the chain id, so every frame breaks.
    m.run.id = "run_00000000000000000000000000000000";
    const result = verifyBundle(writeBundle(m, SERVER_SECRET, SERVER_KEY_ID), { serverKey: SERVER_PUBLIC });
    const count = (code: string) => result.findings.filter((f) => f.code === code).length;
    expect(m.frames.length).toBeGreaterThan(MAX_FINDINGS_PER_CODE);
    expect(count("FRAME_HASH_MISMATCH")).toBe(MAX_FINDINGS_PER_CODE);
    expect(result.findings.filter((f) => f.code === "FINDINGS_OMITTED").map((f) => f.message)).toEqual([
      `${m.frames.length - MAX_FINDINGS_PER_CODE} more FRAME_HASH_MISMATCH findings are not listed (the first ${MAX_FINDINGS_PER_CODE} are).`,
    ]);
    expect(result.exit).toBe(1);
    expect(result.firstBrokenSeq).toBe(0);
  });

  it("holds the signature line last and the head line first", () => {
    const l = bundleLines(SAMPLE.bundle);
    expect(l[0]).toMatch(/^\{"oxagen_bundle":2,"payload_type":"application\/vnd\.oxagen\.bundle\.v2\+jsonl",/);
    expect(l.at(-1)).toMatch(/^\{"end":/);
    expect(SAMPLE.bundle.trimEnd().split("\n").at(-1)).toMatch(/^\{"signature":\{"key_id":"[0-9a-f]{16}","sig":"[0-9a-f]{128}"\}\}$/);
  });
});
