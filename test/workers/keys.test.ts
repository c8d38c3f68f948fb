import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  bytesToHex,
  endorsedKey,
  fromHex,
  KeyEndorsements,
  keyIdFor,
  newSecretKey,
  openPolicy,
  publicKeyOf,
  ServerKeySet,
  type SignedPolicy,
  signRequest,
} from "../../protocol/index.ts";
import worker from "../../workers/index.ts";
import { SERVER_KEY_ID, SERVER_PUBLIC, SERVER_SECRET } from "../support/sample-run.ts";
import { BASE, enrollHost, seedWorkspace, type TestHost } from "./support.ts";

let host: TestHost;

beforeAll(async () => {
  const { token } = await seedWorkspace();
  host = await enrollHost(token);
});

/** Calls the Worker as a deployment configured with other key secrets would answer. */
async function withKeys(keys: { OXAGEN_SIGNING_KEY: string; OXAGEN_PREVIOUS_SIGNING_KEY?: string }, path: string, headers = {}) {
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(`${BASE}${path}`, { headers }), { ...env, ...keys } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("GET /v1/keys", () => {
  it("answers each key with the period it signs in; the first key on record has signed since the start", async () => {
    const res = await exports.default.fetch(`${BASE}/v1/keys`);
    expect(res.status).toBe(200);
    const set = ServerKeySet.parse(await res.json());
    expect(set.keys).toEqual([
      {
        key_id: SERVER_KEY_ID,
        alg: "ed25519",
        pub: bytesToHex(SERVER_PUBLIC),
        use: ["bundle", "policy", "seal"],
        not_before_ms: 0,
        not_after_ms: null,
      },
    ]);
  });

  it("takes a new key: it signs from its start, the old one stops there, and the old one endorses it", async () => {
    await exports.default.fetch(`${BASE}/v1/keys`);
    const next = newSecretKey();
    const nextId = keyIdFor(publicKeyOf(next));
    const rotated = { OXAGEN_SIGNING_KEY: bytesToHex(next), OXAGEN_PREVIOUS_SIGNING_KEY: bytesToHex(SERVER_SECRET) };
    const set = ServerKeySet.parse(await (await withKeys(rotated, "/v1/keys")).json());
    expect(set.keys.map((k) => k.key_id)).toEqual([nextId, SERVER_KEY_ID]);
    expect(set.keys[0]!.not_after_ms).toBeNull();
    expect(set.keys[1]!.not_after_ms).toBe(set.keys[0]!.not_before_ms);
    // A host's policy is now signed by the new key; a collector that pinned the old one follows the endorsement.
    const path = "/v1/policy";
    const auth = signRequest(host.secret, {
      origin: BASE,
      method: "GET",
      pathAndQuery: path,
      hostId: host.id,
      headers: {},
      body: new Uint8Array(),
    });
    const signed = (await (await withKeys(rotated, path, auth)).json()) as SignedPolicy;
    expect(signed.key_id).toBe(nextId);
    const { endorsements } = KeyEndorsements.parse(await (await withKeys(rotated, "/v1/keys/endorsements")).json());
    const learned = endorsedKey({ key_id: SERVER_KEY_ID, pub: bytesToHex(SERVER_PUBLIC) }, nextId, endorsements);
    expect(learned).toEqual({ key_id: nextId, pub: bytesToHex(publicKeyOf(next)) });
    expect(openPolicy(signed, publicKeyOf(next))).toMatchObject({ host: host.id });
    // Going back to the retired key is refused rather than signing with it after its end.
    const back = await withKeys({ OXAGEN_SIGNING_KEY: bytesToHex(SERVER_SECRET) }, "/v1/keys");
    expect(back.status).toBe(500);
    expect(await back.json()).toMatchObject({ error: "server_misconfigured" });
  });

  it("does not follow an endorsement the earlier key did not sign", () => {
    const next = bytesToHex(publicKeyOf(newSecretKey()));
    const forged = [{ key_id: keyIdFor(fromHex(next, 32)), pub: next, not_before_ms: 1, by: SERVER_KEY_ID, sig: "00".repeat(64) }];
    expect(endorsedKey({ key_id: SERVER_KEY_ID, pub: bytesToHex(SERVER_PUBLIC) }, forged[0]!.key_id, forged)).toBeNull();
  });
});

describe("the Worker's native Ed25519 signer", () => {
  it("gives the same signature bytes as noble (Ed25519 is deterministic)", async () => {
    const { nativeSign } = await import("../../workers/native-crypto.ts");
    const ed = await import("@noble/ed25519");
    for (const text of ["a policy payload", "", "x".repeat(5000)]) {
      const message = new TextEncoder().encode(text);
      expect(bytesToHex(nativeSign(SERVER_SECRET, message))).toBe(bytesToHex(ed.sign(message, SERVER_SECRET)));
    }
  });
});
