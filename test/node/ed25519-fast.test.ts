import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { newSecretKey, publicKeyOf, sign, useFastSign, useFastVerify, useSha256, verifyStrict } from "../../protocol/index.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";
import { looseHex, WYCHEPROOF } from "../support/wycheproof.ts";

describe("node:crypto as the fast path of strict Ed25519", () => {
  const decide = () => WYCHEPROOF.map((c) => verifyStrict(looseHex(c.pk), looseHex(c.msg), looseHex(c.sig)));
  const slow = decide();
  useNodeCrypto();
  afterAll(() => {
    useFastVerify(null);
    useFastSign(null);
  });

  it("signs the same bytes noble signs", () => {
    for (let i = 0; i < 100; i++) {
      const secret = newSecretKey();
      const msg = randomBytes(i * 7);
      const fast = sign(secret, msg);
      useFastSign(null);
      const noble = sign(secret, msg);
      useNodeCrypto();
      expect(Buffer.from(fast).toString("hex")).toBe(Buffer.from(noble).toString("hex"));
    }
  });

  it("makes exactly the decisions noble alone makes on every Wycheproof vector", () => {
    expect(decide()).toEqual(slow);
  });

  it("agrees with noble alone on honest and mutated signatures", () => {
    let agreed = 0;
    for (let i = 0; i < 200; i++) {
      const secret = newSecretKey();
      const pub = publicKeyOf(secret);
      const msg = randomBytes(i % 64);
      const sig = sign(secret, msg);
      if (i % 2) sig[i % 64]! ^= 1 << (i % 8);
      const fast = verifyStrict(pub, msg, sig);
      useFastVerify(null);
      const strict = verifyStrict(pub, msg, sig);
      useNodeCrypto();
      expect(fast).toBe(strict);
      agreed++;
    }
    expect(agreed).toBe(200);
  });

  it("installs a SHA-256 that agrees with noble", async () => {
    const { sha256: nobleSha } = await import("@noble/hashes/sha2.js");
    const { sha256 } = await import("../../protocol/index.ts");
    const data = randomBytes(1000);
    expect(Buffer.from(sha256(data)).toString("hex")).toBe(Buffer.from(nobleSha(data)).toString("hex"));
    void useSha256;
  });
});
