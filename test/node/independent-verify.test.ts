import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TAMPER_CASES } from "../support/tamper-cases.ts";

// scripts/independent-verify.py is a verifier written from docs/record-format.md alone, in
// Python with only the standard library. These tests check that it agrees with the sample
// bundles and with the whole tamper corpus, which shows the written format is enough to implement.

const root = join(import.meta.dirname, "../..");
const script = join(root, "scripts/independent-verify.py");
const vectors = join(root, "test/vectors");
const key = join(vectors, "server-key.pub");
const tmp = mkdtempSync(join(tmpdir(), "oxagen-indep-"));

const probe = spawnSync("python3", ["--version"], { encoding: "utf8" });
const hasPython = !probe.error && probe.status === 0;

function verify(...args: string[]) {
  const r = spawnSync("python3", [script, ...args], { encoding: "utf8", timeout: 60_000 });
  return { exit: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe.skipIf(!hasPython)("independent Python verifier (skipped: python3 is not on PATH)", () => {
  it.each(["bundle.jsonl", "bundle-v1.json"])("exits 0 on the sample bundle %s with its bodies", (file) => {
    const r = verify(join(vectors, file), "--server-key", key, "--bodies", join(vectors, "bodies"));
    expect(r.stdout).toBe("");
    expect(r.exit).toBe(0);
  });

  it("exits 1 on a copy with one payload byte edited and nothing re-signed", () => {
    const text = readFileSync(join(vectors, "bundle.jsonl"), "utf8");
    const needle = '"cwd":"/work"';
    expect(text.split(needle)).toHaveLength(2);
    const tampered = text.replace(needle, '"cwd":"/worK"');
    const path = join(tmp, "tampered.jsonl");
    writeFileSync(path, tampered);
    const r = verify(path, "--server-key", key);
    expect(r.exit).toBe(1);
    expect(r.stdout).toMatch(/^SERVER_SIG_INVALID /m);
    expect(r.stdout).toMatch(/^FRAME_HASH_MISMATCH frame 0 /m);
  });

  it("picks the pinned key the signature names, and refuses one outside its period (exit 2)", () => {
    const pub = readFileSync(key, "utf8").trim();
    const list = (notAfter: number | null) => {
      const path = join(tmp, `keys-${notAfter}.json`);
      const entry = { key_id: "72c2bff716caa385", alg: "ed25519", pub, use: ["bundle"], not_before_ms: 0, not_after_ms: notAfter };
      writeFileSync(path, JSON.stringify({ keys: [entry] }));
      return path;
    };
    const other = "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025";
    const bundle = join(vectors, "bundle.jsonl");
    expect(verify(bundle, "--server-key", other, "--server-key", key).exit).toBe(0);
    expect(verify(bundle, "--server-keys", list(null)).exit).toBe(0);
    const expired = verify(bundle, "--server-keys", list(1));
    expect(expired.exit).toBe(2);
    expect(expired.stdout).toMatch(/^SERVER_KEY_NOT_VALID /m);
    expect(verify(bundle, "--server-key", other).stdout).toMatch(/^SERVER_KEY_UNKNOWN /m);
  });

  it("gives the exit code of every case of the tamper corpus, in both layouts", () => {
    const cases = ([2, 1] as const).flatMap((layout) =>
      TAMPER_CASES.flatMap((c, i) => {
        const bundle = c.bundle(layout);
        if (bundle === null) return [];
        const path = join(tmp, `case-${layout}-${i}`);
        writeFileSync(path, bundle);
        return [{ name: `v${layout} ${c.name}`, line: `${path}${c.expectHead ? `\t${c.expectHead}` : ""}`, exit: c.exit }];
      }),
    );
    const r = spawnSync("python3", [script, "--batch", "--server-key", key], {
      encoding: "utf8",
      input: cases.map((c) => `${c.line}\n`).join(""),
      timeout: 300_000,
    });
    const exits = r.stdout.trim().split("\n").map(Number);
    expect(cases.filter((c, i) => exits[i] !== c.exit).map((c) => c.name)).toEqual([]);
    expect(exits).toHaveLength(cases.length);
  }, 300_000);
});
