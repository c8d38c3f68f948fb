import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readHost } from "../../collector/lib/state.ts";
import { fetchPolicy, readPolicyFile } from "../../collector/recorder/policy-cache.ts";
import { bytesToHex, endorseKey, keyIdFor, newSecretKey, publicKeyOf } from "../../protocol/index.ts";
import { HOST } from "../support/recorder.ts";
import { SERVER_KEY_ID, SERVER_SECRET } from "../support/sample-run.ts";
import { stubServerEach } from "../support/stub-server.ts";

const stub = stubServerEach();

describe("the cached policy is this host's own", () => {
  it("takes a policy that names this host, and caches it", async () => {
    const host = readHost()!;
    const got = await fetchPolicy(host, null, Date.now());
    expect(got).not.toBe("unchanged");
    expect(readPolicyFile(host)?.policy.host).toBe(HOST);
  });

  it("refuses a policy signed for another host, or for none, and keeps the one it has", async () => {
    const host = readHost()!;
    await fetchPolicy(host, null, Date.now());
    const cached = readFileSync(join(process.env.OXAGEN_HOME!, "policy.json"), "utf8");
    stub.server.policy = { ...stub.server.policy, issued_ms: 2, tools: [{ id: "x", tool: "*", decision: "allow", reason: "for them" }] };
    stub.server.policyHost = "h-someone-else";
    await expect(fetchPolicy(host, null, Date.now())).rejects.toThrow(/signed for h-someone-else/);
    stub.server.policyHost = null;
    await expect(fetchPolicy(host, null, Date.now())).rejects.toThrow(/signed for no host/);
    expect(readFileSync(join(process.env.OXAGEN_HOME!, "policy.json"), "utf8")).toBe(cached);
  });

  it("refuses a policy issued before the one it caches (a replay)", async () => {
    const host = readHost()!;
    stub.server.policy = { ...stub.server.policy, issued_ms: 100 };
    await fetchPolicy(host, null, Date.now());
    stub.server.policy = { ...stub.server.policy, issued_ms: 99, tools: [{ id: "old", tool: "*", decision: "allow", reason: "old" }] };
    await expect(fetchPolicy(host, null, Date.now())).rejects.toThrow(/issued before/);
    expect(readPolicyFile(host)?.policy.issued_ms).toBe(100);
  });
});

describe("a new server key", () => {
  it("is learned from the pinned key's endorsement, and the pin moves to it", async () => {
    const host = readHost()!;
    const next = newSecretKey();
    const nextId = keyIdFor(publicKeyOf(next));
    stub.server.signingKey = { secret: next, keyId: nextId };
    stub.server.endorsements = [
      endorseKey(SERVER_SECRET, SERVER_KEY_ID, { key_id: nextId, pub: bytesToHex(publicKeyOf(next)), not_before_ms: 5 }),
    ];
    const got = await fetchPolicy(host, null, Date.now());
    expect(got).not.toBe("unchanged");
    expect(readHost()!.server_key).toEqual({ key_id: nextId, pub: bytesToHex(publicKeyOf(next)) });
    expect(host.server_key.key_id).toBe(nextId);
    expect(readPolicyFile(readHost()!)?.policy.host).toBe(HOST);
  });

  it("is refused, and the pin kept, when no endorsement from the pinned key leads to it", async () => {
    const host = readHost()!;
    const next = newSecretKey();
    const stranger = newSecretKey();
    const nextId = keyIdFor(publicKeyOf(next));
    stub.server.signingKey = { secret: next, keyId: nextId };
    stub.server.endorsements = [
      endorseKey(stranger, SERVER_KEY_ID, { key_id: nextId, pub: bytesToHex(publicKeyOf(next)), not_before_ms: 5 }),
    ];
    await expect(fetchPolicy(host, null, Date.now())).rejects.toThrow(/other than the pinned server key/);
    expect(readHost()!.server_key.key_id).toBe(SERVER_KEY_ID);
  });
});
