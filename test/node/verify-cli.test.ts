import { spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");
const vectors = join(root, "test/vectors");
const bundle = join(vectors, "bundle.json");
const key = join(vectors, "server-key.pub");
const tmp = mkdtempSync(join(tmpdir(), "oxagen-verify-"));

function oxagen(...args: string[]) {
  const r = spawnSync(process.execPath, [join(root, "collector/bin/oxagen.js"), ...args], { encoding: "utf8", timeout: 60_000 });
  return { exit: r.status, stdout: r.stdout, stderr: r.stderr };
}

function write(name: string, content: string | Buffer): string {
  const path = join(tmp, name);
  writeFileSync(path, content);
  return path;
}

describe("oxagen verify (the real command)", () => {
  it("exits 0 on the sample bundle with its bodies, and says what it proves", () => {
    const r = oxagen("verify", bundle, "--server-key", key, "--bodies", join(vectors, "bodies"));
    expect(r.exit).toBe(0);
    expect(r.stdout).toMatch(/result: VALID \(exit 0\)/);
    expect(r.stdout).toMatch(/It does not prove/);
    expect(r.stderr).toBe("");
  });

  it("prints one JSON document with --json", () => {
    const r = oxagen("verify", bundle, "--server-key", readFileSync(key, "utf8").trim(), "--json");
    expect(r.exit).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ exit: 0, result: "valid", findings: [], first_broken_seq: null });
    expect(out.summary.frames).toBe(9);
  });

  it("exits 1 on a tampered bundle, naming the finding and the first broken seq", () => {
    const text = readFileSync(bundle, "utf8");
    const m = JSON.parse(text.slice(text.indexOf('"manifest":') + 11, text.lastIndexOf(',"signature":')));
    const edited = write("edited.json", text.replace(m.frames[3].hash, "0".repeat(64)));
    const r = oxagen("verify", edited, "--server-key", key);
    expect(r.exit).toBe(1);
    expect(r.stdout).toMatch(/SERVER_SIG_INVALID/);
    expect(r.stdout).toMatch(/FRAME_HASH_MISMATCH +frame 3/);
    expect(r.stdout).toMatch(/first broken seq: 3/);
  });

  it("exits 1 when the head is not the one expected", () => {
    const r = oxagen("verify", bundle, "--server-key", key, "--expect-head", "a".repeat(64));
    expect(r.exit).toBe(1);
    expect(r.stdout).toMatch(/EXPECTED_HEAD_MISMATCH/);
  });

  it("exits 3 when a body named by the record is not in --bodies", () => {
    const dir = join(tmp, "few-bodies");
    mkdirSync(dir);
    const r = oxagen("verify", bundle, "--server-key", key, "--bodies", dir);
    expect(r.exit).toBe(3);
    expect(r.stdout).toMatch(/BODY_MISSING/);
  });

  it.each([
    ["no bundle", [] as string[], /name exactly one bundle/],
    ["no key", [bundle], /--server-key is required/],
    ["a bad option", [bundle, "--server-key", key, "--frobnicate"], /Unknown option/],
    ["a key that is not hex", [bundle, "--server-key", "not-a-key"], /cannot read the server key/],
    ["a bad --expect-head", [bundle, "--server-key", key, "--expect-head", "XYZ"], /64 lowercase hex/],
    ["a missing file", [join(tmp, "nope.json"), "--server-key", key], /cannot open/],
    ["a folder", [tmp, "--server-key", key], /is not a file/],
    ["a --bodies that is not a folder", [bundle, "--server-key", key, "--bodies", bundle], /is not a folder/],
  ])("exits 2 with a clear message for %s", (_name, args, message) => {
    const r = oxagen("verify", ...args);
    expect(r.exit).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it.each([
    ["an empty file", ""],
    ["random bytes", Buffer.from(Array.from({ length: 1 << 20 }, (_, i) => (i * 7919) % 251))],
    ["a megabyte of brackets", "[".repeat(1 << 20)],
    ["invalid UTF-8", Buffer.from([0x7b, 0xff, 0xfe, 0x7d])],
    ["a truncated bundle", readFileSync(bundle, "utf8").slice(0, 3000)],
  ])("exits 2 on %s, with no stack trace", (name, content) => {
    const r = oxagen("verify", write(`${name}.json`, content), "--server-key", key);
    expect(r.exit).toBe(2);
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/\n\s+at /);
    expect(r.stdout).toMatch(/CANNOT VERIFY/);
  });
});

describe("oxagen verify on a bundle large enough to share the work with a second thread", () => {
  it("decides as the in-process verifier does, clean and tampered", async () => {
    const { sampleRun, SERVER_PUBLIC } = await import("../support/sample-run.ts");
    const { bytesToHex, verifyBundle } = await import("../../protocol/index.ts");
    const run = sampleRun({ lockEvery: 50, extraToolCalls: 3000 });
    expect(run.bundle.length).toBeGreaterThan(2 * 1024 * 1024);
    const serverKey = bytesToHex(SERVER_PUBLIC);
    const m = run.manifest;
    const cases = [
      ["large.json", run.bundle],
      ["large-edited.json", run.bundle.replace(m.frames[9000]!.hash, "1".repeat(64))],
    ] as const;
    for (const [name, text] of cases) {
      const r = oxagen("verify", write(name, text), "--server-key", serverKey, "--json");
      const expected = verifyBundle(Buffer.from(text), { serverKey: SERVER_PUBLIC });
      const out = JSON.parse(r.stdout);
      expect(r.exit).toBe(expected.exit);
      expect(out.findings).toEqual(expected.findings);
      expect(out.summary).toEqual(expected.summary);
      expect(out.first_broken_seq).toBe(expected.firstBrokenSeq);
    }
    expect(cases.map(([name]) => oxagen("verify", join(tmp, name), "--server-key", serverKey).exit)).toEqual([0, 1]);
  });
});
