import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";
import { afterAll, describe, expect, it } from "vitest";
import { bytesToHex, sha256, sha256Into, useSha256 } from "../../protocol/index.ts";
import { useNodeCrypto } from "../../collector/lib/node-crypto.ts";

describe("node:crypto SHA-256 as protocol's implementation", () => {
  useNodeCrypto();
  afterAll(() => useSha256((data) => nobleSha256(data)));

  it("computes what @noble/hashes computes, for every length around block edges and digests with high bytes", () => {
    for (let n = 0; n < 300; n++) {
      const data = Uint8Array.from({ length: n }, (_, i) => (i * 131 + n) & 0xff);
      const expected = bytesToHex(nobleSha256(data));
      expect(bytesToHex(sha256(data))).toBe(expected);
      const out = new Uint8Array(40).fill(7);
      sha256Into(data, out, 5);
      expect(bytesToHex(out.subarray(5, 37))).toBe(expected);
      expect([...out.subarray(0, 5), ...out.subarray(37)]).toEqual([7, 7, 7, 7, 7, 7, 7, 7]);
    }
  });
});
