import { spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");
const vectors = join(root, "test/vectors");
const bundle = join(vectors, "bundle.jsonl");
const bundleV1 = join(vectors, "bundle-v1.json");
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

const serverPub = readFileSync(key, "utf8").trim();
const keyEntry = (fields: Record<string, unknown> = {}) => ({
  key_id: "72c2bff716caa385",
  alg: "ed25519",
  pub: serverPub,
  use: ["bundle", "policy", "seal"],
  not_before_ms: 0,
  not_after_ms: null,
  ...fields,
});
let lists = 0;
const keyList = (keys: unknown[]) => write(`keys-${lists++}.json`, JSON.stringify({ keys }));
// Another valid key (RFC 8032 section 7.1, TEST 3), pinned beside the server's.
const OTHER = "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025";

describe("oxagen verify with a pinned set of server keys", () => {
  const exported = JSON.parse(readFileSync(bundle, "utf8").split("\n")[0]!).exported_ms as number;

  it("picks the pinned key the signature names, from repeated --server-key (hex or file)", () => {
    expect(oxagen("verify", bundle, "--server-key", OTHER, "--server-key", key).exit).toBe(0);
    expect(oxagen("verify", bundle, "--server-key", serverPub, "--server-key", OTHER).exit).toBe(0);
  });

  it("exits 2 when no pinned key has the signature's key id", () => {
    const r = oxagen("verify", bundle, "--server-key", OTHER, "--json");
    expect(r.exit).toBe(2);
    expect(JSON.parse(r.stdout).findings.map((f: { code: string }) => f.code)).toEqual(["SERVER_KEY_UNKNOWN"]);
  });

  it("takes the GET /v1/keys answer with --server-keys, and refuses a key used outside its period or use", () => {
    const other = { ...keyEntry(), key_id: "b31aae92c383363d", pub: OTHER };
    const codes = (keys: unknown[]) => {
      const r = oxagen("verify", bundle, "--server-keys", keyList(keys), "--json");
      return [r.exit, JSON.parse(r.stdout).findings.map((f: { code: string }) => f.code)];
    };
    expect(codes([other, keyEntry({ not_before_ms: exported, not_after_ms: exported })])).toEqual([0, []]);
    expect(codes([keyEntry({ not_after_ms: exported - 1 })])).toEqual([2, ["SERVER_KEY_NOT_VALID"]]);
    expect(codes([keyEntry({ not_before_ms: exported + 1 })])).toEqual([2, ["SERVER_KEY_NOT_VALID"]]);
    expect(codes([keyEntry({ use: ["policy", "seal"] })])).toEqual([2, ["SERVER_KEY_NOT_VALID"]]);
    expect(codes([other])).toEqual([2, ["SERVER_KEY_UNKNOWN"]]);
  });
});

describe("oxagen verify (the real command)", () => {
  it.each([
    ["version 2", bundle],
    ["version 1", bundleV1],
  ])("exits 0 on the sample bundle (%s) with its bodies, and says what it proves", (_name, file) => {
    const r = oxagen("verify", file, "--server-key", key, "--bodies", join(vectors, "bodies"));
    expect(r.exit).toBe(0);
    expect(r.stdout).toMatch(/result: VALID \(exit 0\)/);
    expect(r.stdout).toMatch(/6 bodies checked/);
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
    const hash = JSON.parse(text.split("\n").find((l) => l.startsWith('{"seq":3,'))!).hash;
    const edited = write("edited.jsonl", text.replace(hash, "0".repeat(64)));
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
    ["no key", [bundle], /--server-key or --server-keys is required/],
    ["a key list that is not JSON", [bundle, "--server-keys", bundle], /cannot read the server keys/],
    ["a key list whose key_id is not its key's", [bundle, "--server-keys", "BAD_ID_KEYS"], /not the id of its key/],
    ["a bad option", [bundle, "--server-key", key, "--frobnicate"], /Unknown option/],
    ["a key that is not hex", [bundle, "--server-key", "not-a-key"], /cannot read the server key/],
    ["a bad --expect-head", [bundle, "--server-key", key, "--expect-head", "XYZ"], /64 lowercase hex/],
    ["a missing file", [join(tmp, "nope.json"), "--server-key", key], /cannot open/],
    ["a folder", [tmp, "--server-key", key], /is not a file/],
    ["a --bodies that is not a folder", [bundle, "--server-key", key, "--bodies", bundle], /is not a folder/],
  ])("exits 2 with a clear message for %s", (_name, args, message) => {
    const r = oxagen("verify", ...args.map((a) => (a === "BAD_ID_KEYS" ? keyList([{ ...keyEntry(), key_id: "0011223344556677" }]) : a)));
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
    ["a truncated version-1 bundle", readFileSync(bundleV1, "utf8").slice(0, 3000)],
  ])("exits 2 on %s, with no stack trace", (name, content) => {
    const r = oxagen("verify", write(`${name}.json`, content), "--server-key", key);
    expect(r.exit).toBe(2);
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/\n\s+at /);
    expect(r.stdout).toMatch(/CANNOT VERIFY/);
  });
});

describe("oxagen verify on a bundle large enough to share the work with a second thread", () => {
  it("decides as the in-process verifier does, clean and tampered, in both layouts", async () => {
    const { sampleRun, SERVER_PUBLIC } = await import("../support/sample-run.ts");
    const { bytesToHex, verifyBundle } = await import("../../protocol/index.ts");
    const run = sampleRun({ lockEvery: 50, extraToolCalls: 3000 });
    expect(run.bundle.length).toBeGreaterThan(2 * 1024 * 1024);
    const serverKey = bytesToHex(SERVER_PUBLIC);
    const m = run.manifest;
    const cases = [
      ["large.jsonl", run.bundle],
      ["large-edited.jsonl", run.bundle.replace(m.frames[9000]!.hash, "1".repeat(64))],
      ["large.json", run.bundleV1],
      ["large-edited.json", run.bundleV1.replace(m.frames[9000]!.hash, "1".repeat(64))],
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
    expect(cases.map(([name]) => oxagen("verify", join(tmp, name), "--server-key", serverKey).exit)).toEqual([0, 1, 0, 1]);
  }, 300_000); // a dozen verifies of a multi-MiB bundle, each a process: minutes on a loaded 2-core machine
});

describe("oxagen verify prints the run's coverage statement next to its result", () => {
  it("from the bundle's own frames, in text and in --json, the same as protocol's one generator gives", async () => {
    const { coverageStatement, coverageText } = await import("../../protocol/index.ts");
    const text = oxagen("verify", bundle, "--server-key", key);
    expect(text.exit).toBe(0);
    expect(text.stdout).toMatch(/result: VALID \(exit 0\)[\s\S]*\nCoverage statement\n/);
    const json = JSON.parse(oxagen("verify", bundle, "--server-key", key, "--json").stdout);
    const lines = readFileSync(bundle, "utf8").trim().split("\n");
    const end = JSON.parse(lines.at(-1)!).end ?? JSON.parse(lines.at(-2)!).end;
    expect(json.summary.coverage).toEqual(end.coverage);
    const expected = coverageStatement({ harness: json.summary.harness, facts: end.coverage, gapCounts: json.summary.gapCounts });
    expect(json.coverage_statement).toEqual(expected);
    expect(expected.holds.length).toBeGreaterThan(0);
    expect(text.stdout.endsWith(coverageText(expected))).toBe(true);
  });
});
