import { describe, expect, it } from "vitest";
import { bytesToHex, fromHex, publicKeyOf, publicKeyProblem, sign, verifyStrict } from "../../protocol/index.ts";
import { looseHex, WYCHEPROOF } from "../support/wycheproof.ts";

describe("strict Ed25519 (noble, zip215: false)", () => {
  it("decides all 151 Wycheproof vectors as Wycheproof expects", () => {
    expect(WYCHEPROOF).toHaveLength(151);
    const wrong = WYCHEPROOF.filter((c) => verifyStrict(looseHex(c.pk), looseHex(c.msg), looseHex(c.sig)) !== c.valid).map((c) => c.tcId);
    expect(wrong).toEqual([]);
  });

  it("derives a public key once per key, and again for a key changed in place or a returned key changed by its caller", () => {
    const secret = fromHex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", 32);
    const first = publicKeyOf(secret);
    first.fill(0);
    expect(bytesToHex(publicKeyOf(secret))).toBe("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    // RFC 8032 TEST 2's secret, written over the same array.
    secret.set(fromHex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", 32));
    expect(bytesToHex(publicKeyOf(secret))).toBe("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");
  });

  it("reproduces RFC 8032 TEST 1", () => {
    const secret = fromHex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", 32);
    expect(bytesToHex(publicKeyOf(secret))).toBe("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
    const sig = sign(secret, new Uint8Array());
    expect(bytesToHex(sig)).toBe(
      "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    );
  });

  it.each([
    ["the identity (small order)", "0100000000000000000000000000000000000000000000000000000000000000", /small order/],
    ["a point of order 8", "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a", /small order/],
    ["a non-canonical encoding (y >= p)", "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", /canonical|small order/],
    ["a point off the curve", "0200000000000000000000000000000000000000000000000000000000000000", /canonical/],
  ])("refuses %s as a public key", (_name, hex, reason) => {
    expect(publicKeyProblem(fromHex(hex, 32))).toMatch(reason);
  });

  it("never throws on malformed lengths", () => {
    expect(verifyStrict(new Uint8Array(31), new Uint8Array(), new Uint8Array(64))).toBe(false);
    expect(verifyStrict(new Uint8Array(32), new Uint8Array(), new Uint8Array(63))).toBe(false);
  });
});
