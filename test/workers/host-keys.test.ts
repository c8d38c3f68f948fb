import { beforeAll, describe, expect, it } from "vitest";
import { bytesToHex, hostKeyProofInput, keyIdFor, newSecretKey, publicKeyOf, sign, verifyBundle } from "../../protocol/index.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";
import { enrollHost, hostCall, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
});

async function rotate(h: TestHost): Promise<{ res: Response; next: TestHost }> {
  const secret = newSecretKey();
  const pub = bytesToHex(publicKeyOf(secret));
  const proof = bytesToHex(sign(secret, hostKeyProofInput(h.id, pub, keyIdFor(publicKeyOf(h.secret)))));
  const res = await hostCall(h, "POST", "/v1/host/key", JSON.stringify({ public_key: pub, proof }));
  return { res, next: { ...h, secret } };
}

describe("host key rotation", () => {
  it("moves the host to a new key it proved it holds; the old key signs nothing more", async () => {
    const host = await enrollHost(token, newSecretKey());
    const { res, next } = await rotate(host);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      host_id: host.id,
      key_id: keyIdFor(publicKeyOf(next.secret)),
      retired_key_id: keyIdFor(publicKeyOf(host.secret)),
    });
    expect((await hostCall(host, "GET", "/v1/host")).status).toBe(401);
    expect((await hostCall(next, "GET", "/v1/host")).status).toBe(200);
    const view = (await (await op(token, `/v1/hosts/${host.id}`)).json()) as { keys: { key_id: string; not_after_ms: number | null }[] };
    expect(view.keys.map((k) => k.key_id)).toEqual([keyIdFor(publicKeyOf(next.secret)), keyIdFor(publicKeyOf(host.secret))]);
    expect(view.keys[0]!.not_after_ms).toBeNull();
    expect(view.keys[1]!.not_after_ms).toBeTypeOf("number");
  });

  it("refuses a new key without the new key's proof, or a key the host had before", async () => {
    const host = await enrollHost(token, newSecretKey());
    const other = newSecretKey();
    const forged = bytesToHex(sign(other, hostKeyProofInput(host.id, bytesToHex(publicKeyOf(newSecretKey())), "0".repeat(16))));
    const bad = await hostCall(host, "POST", "/v1/host/key", JSON.stringify({ public_key: bytesToHex(publicKeyOf(other)), proof: forged }));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: "bad_proof" });
    const { next } = await rotate(host);
    const back = bytesToHex(publicKeyOf(host.secret));
    const proof = bytesToHex(sign(host.secret, hostKeyProofInput(host.id, back, keyIdFor(publicKeyOf(next.secret)))));
    const reused = await hostCall(next, "POST", "/v1/host/key", JSON.stringify({ public_key: back, proof }));
    expect(reused.status).toBe(409);
  });

  it("keeps checking a run with the key that locked it first, and its bundle still verifies", async () => {
    const host = await enrollHost(token, newSecretKey());
    const run = new TestRun(host);
    run.start();
    run.lock();
    // Recorded and locked before the rotation, shipped after it.
    const { next } = await rotate(host);
    expect((await ingest(next, [run.part(run.frames, run.locks)])).body.chains[0]).toMatchObject({ locks_stored: 1 });
    run.stop();
    run.lock(true);
    expect((await ingest(next, [run.part(run.frames, run.locks)])).body.chains[0]).toMatchObject({ stored: 2, locks_stored: 1 });
    const fresh = new TestRun(next);
    fresh.start();
    fresh.lock();
    expect((await ingest(next, [fresh.part(fresh.frames, fresh.locks)])).body.chains[0]).toMatchObject({ locks_stored: 1 });
    // A chain its first lock pinned to the old key takes no lock by the new one.
    const pinned = new TestRun(host);
    pinned.start();
    pinned.lock();
    await ingest(next, [pinned.part(pinned.frames, pinned.locks)]);
    pinned.tool();
    const byNew = pinned.writer.lock({ secretKey: next.secret, hostId: host.id, t: pinned.t + 1 })!;
    expect((await ingest(next, [pinned.part(pinned.frames, [byNew])])).body.chains[0]).toMatchObject({
      locks_refused: [{ lock_seq: 1, reason: expect.stringContaining("the key this chain is locked with") }],
    });
    const exported = await (await op(token, `/v1/runs/${run.chain}/export`)).text();
    const result = verifyBundle(exported, { serverKey: publicKeyOf(SERVER_SECRET) });
    expect(result.findings.filter((f) => f.severity === "tamper")).toEqual([]);
    expect(exported).toContain(`"key_id":"${keyIdFor(publicKeyOf(host.secret))}"`);
  });
});

describe("unenrollment", () => {
  it("lets a host unenroll itself: it is then refused like an unknown host, and its runs stay", async () => {
    const host = await enrollHost(token, newSecretKey());
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    const res = await hostCall(host, "DELETE", "/v1/host");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ host_id: host.id, status: "unenrolled" });
    const after = await hostCall(host, "GET", "/v1/policy");
    expect(after.status).toBe(401);
    expect(await after.json()).toMatchObject({ error: "bad_signature" });
    expect((await op(token, `/v1/runs/${run.chain}`)).status).toBe(200);
    expect(await (await op(token, `/v1/hosts/${host.id}`)).json()).toMatchObject({ status: "unenrolled" });
    expect((await op(token, `/v1/hosts/${host.id}/resume`, { method: "POST" })).status).toBe(409);
  });

  it("lets an operator unenroll a host", async () => {
    const host = await enrollHost(token, newSecretKey());
    expect((await op(token, `/v1/hosts/${host.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await hostCall(host, "GET", "/v1/policy")).status).toBe(401);
  });
});
