import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// scripts/independent-verify.py is a verifier written from docs/record-format.md alone, in
// Python with only the standard library. These tests check that it agrees with the sample
// bundle, which shows the written format is enough to implement.

const root = join(import.meta.dirname, "../..");
const script = join(root, "scripts/independent-verify.py");
const vectors = join(root, "test/vectors");
const bundle = join(vectors, "bundle.json");
const key = join(vectors, "server-key.pub");

const probe = spawnSync("python3", ["--version"], { encoding: "utf8" });
const hasPython = !probe.error && probe.status === 0;

function verify(...args: string[]) {
  const r = spawnSync("python3", [script, ...args], { encoding: "utf8", timeout: 60_000 });
  return { exit: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe.skipIf(!hasPython)("independent Python verifier (skipped: python3 is not on PATH)", () => {
  it("exits 0 on the sample bundle with its bodies", () => {
    const r = verify(bundle, "--server-key", key, "--bodies", join(vectors, "bodies"));
    expect(r.stdout).toBe("");
    expect(r.exit).toBe(0);
  });

  it("exits 1 on a copy with one payload byte edited and nothing re-signed", () => {
    const text = readFileSync(bundle, "utf8");
    const needle = '\\"cwd\\":\\"/work\\"';
    expect(text.split(needle)).toHaveLength(2);
    const tampered = text.replace(needle, '\\"cwd\\":\\"/worK\\"');
    expect(Buffer.byteLength(tampered)).toBe(Buffer.byteLength(text));
    const path = join(mkdtempSync(join(tmpdir(), "oxagen-indep-")), "tampered.json");
    writeFileSync(path, tampered);
    const r = verify(path, "--server-key", key);
    expect(r.exit).toBe(1);
    expect(r.stdout).toMatch(/^SERVER_SIG_INVALID /m);
    expect(r.stdout).toMatch(/^FRAME_HASH_MISMATCH frame 0 /m);
  });
});
