// The Wycheproof Ed25519 vectors (test/vectors/wycheproof/), flattened. Pure: runs in both runtimes.
import vectors from "../vectors/wycheproof/ed25519_test.json";

export interface WycheproofCase {
  tcId: number;
  pk: string;
  msg: string;
  sig: string;
  valid: boolean;
  flags: string[];
}

export const WYCHEPROOF: WycheproofCase[] = vectors.testGroups.flatMap((g) =>
  g.tests.map((t) => ({ tcId: t.tcId, pk: g.publicKey.pk, msg: t.msg, sig: t.sig, valid: t.result === "valid", flags: t.flags })),
);

/** Hex to bytes that tolerates odd or empty input, as some vectors carry malformed lengths. */
export function looseHex(hex: string): Uint8Array {
  const out = new Uint8Array(Math.floor(hex.length / 2));
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}
