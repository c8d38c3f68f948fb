import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { verifyBundle } from "../../protocol/index.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import { SERVER_PUBLIC } from "../support/sample-run.ts";

describe.each(["bundle.jsonl", "bundle-v1.json"])("bit-flip fuzz over the whole sample bundle (%s)", (file) => {
  useNodeCrypto();
  const bundle = readFileSync(join(import.meta.dirname, "../vectors", file));

  it("verifies untouched", () => {
    expect(verifyBundle(bundle, { serverKey: SERVER_PUBLIC }).exit).toBe(0);
  });

  it("never yields exit 0 (nor throws) for any single flipped bit, one per byte", () => {
    const exits = new Map<number, number>();
    const escaped: number[] = [];
    for (let i = 0; i < bundle.length; i++) {
      const copy = Buffer.from(bundle);
      copy[i]! ^= 1 << (i % 8);
      const { exit } = verifyBundle(copy, { serverKey: SERVER_PUBLIC });
      exits.set(exit, (exits.get(exit) ?? 0) + 1);
      if (exit === 0) escaped.push(i);
    }
    expect(escaped).toEqual([]);
    expect([...exits.keys()].every((e) => e === 1 || e === 2)).toBe(true);
  });
});
