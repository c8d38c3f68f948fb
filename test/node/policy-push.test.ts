// The recorder's side of a push that carries its signed policy (collector/recorder/push.ts with
// daemon/policy.ts, wired as daemon/wire.ts wires them): taken without a fetch when it verifies,
// refused under exactly the rules a fetched policy is (the pinned key, this host, never older than
// the cached one), and then fetched instead. The server side is the stub server's push connection.
import { describe, expect, it } from "vitest";
import { readHost } from "../../collector/lib/state.ts";
import { PolicyRefresher } from "../../collector/daemon/policy.ts";
import type { Recorder } from "../../collector/recorder/recorder.ts";
import { readPolicyFile } from "../../collector/recorder/policy-cache.ts";
import { PolicyPush } from "../../collector/recorder/push.ts";
import { newSecretKey, policyEtag } from "../../protocol/index.ts";
import { HOST } from "../support/recorder.ts";
import { stubServerEach } from "../support/stub-server.ts";

let push: PolicyPush | null = null;
const stub = stubServerEach(() => {
  push?.stop();
  push = null;
});

/** The recorder's policy and push connection, connected, with the policy its connection's first fetch brought. */
async function connected() {
  const host = readHost()!;
  const holder = { policy: null } as unknown as Recorder;
  const policy = new PolicyRefresher(host, holder, () => {});
  const hour = 3_600_000;
  const logs: string[] = [];
  push = new PolicyPush(
    host,
    () => policy.etag,
    () => policy.apply(),
    (signed) => policy.applyPushed(signed),
    { baseMs: hour, maxMs: hour, pollMs: hour, pingMs: hour, log: (l) => logs.push(l) },
  );
  push.start();
  const conn = await stub.server.pushConnection();
  // A fetch done (the first open starts one too): the recorder holds a policy before the pushes.
  await policy.apply();
  return { holder, policy, conn, logs, status: push.status };
}

const ackOf = (change: string) => (m: string) => (JSON.parse(m) as { change?: string }).change === change;

describe("a push that carries the host's signed policy", () => {
  it("is verified and applied without a fetch, and acknowledged with its ETag", async () => {
    const { holder, policy, conn, status } = await connected();
    const fetches = stub.server.policyFetches;
    stub.server.policy = { ...stub.server.policy, issued_ms: 10, tools: [{ id: "no", tool: "Bash", decision: "deny", reason: "pushed" }] };
    const signed = stub.server.signedFor(HOST);
    conn.send(JSON.stringify({ type: "policy", etag: policyEtag(signed), change: "chg_1", policy: signed }));
    const ack = JSON.parse(await conn.next(ackOf("chg_1"))) as { etag: string };
    expect(ack.etag).toBe(policyEtag(signed));
    expect(holder.policy?.policy.tools).toEqual([{ id: "no", tool: "Bash", decision: "deny", reason: "pushed" }]);
    expect(readPolicyFile(readHost()!)?.policy.issued_ms).toBe(10);
    expect(stub.server.policyFetches).toBe(fetches);
    expect(status).toMatchObject({ carried: 1, refused: 0 });
    expect(policy.etag).toBe(policyEtag(signed));
  });

  it("with a bad signature, or signed by another key, is refused and the policy fetched instead", async () => {
    const { holder, conn, status, logs } = await connected();
    stub.server.policy = { ...stub.server.policy, issued_ms: 20 };
    const good = stub.server.signedFor(HOST);
    const forged = { ...good, payload: good.payload.replace('"default_tool_decision":"none"', '"default_tool_decision":"allow"') };
    const fetches = stub.server.policyFetches;
    conn.send(JSON.stringify({ type: "policy", etag: policyEtag(forged), change: "chg_bad", policy: forged }));
    const ack = JSON.parse(await conn.next(ackOf("chg_bad"))) as { etag: string };
    // Acknowledged with what the fetch brought, never with the forged policy.
    expect(ack.etag).toBe(policyEtag(good));
    expect(stub.server.policyFetches).toBe(fetches + 1);
    expect(holder.policy?.policy.default_tool_decision).not.toBe("allow");
    stub.server.policy = { ...stub.server.policy, issued_ms: 21 };
    const other = stub.server.signedFor(HOST, { secret: newSecretKey(), keyId: "k-other" });
    stub.server.policy = { ...stub.server.policy, issued_ms: 20 };
    conn.send(JSON.stringify({ type: "policy", etag: policyEtag(other), change: "chg_other", policy: other }));
    await conn.next(ackOf("chg_other"));
    expect(stub.server.policyFetches).toBe(fetches + 2);
    expect(status).toMatchObject({ carried: 0, refused: 2 });
    expect(logs.filter((l) => l.startsWith("pushed policy refused"))).toHaveLength(2);
  });

  it("issued before the cached one, or for another host, is refused and the policy fetched instead", async () => {
    const { holder, conn, status } = await connected();
    stub.server.policy = { ...stub.server.policy, issued_ms: 50 };
    const current = stub.server.signedFor(HOST);
    conn.send(JSON.stringify({ type: "policy", etag: policyEtag(current), change: "chg_50", policy: current }));
    await conn.next(ackOf("chg_50"));
    const replay: typeof stub.server.policy = {
      ...stub.server.policy,
      issued_ms: 40,
      tools: [{ id: "old", tool: "*", decision: "allow", reason: "old" }],
    };
    stub.server.policy = replay;
    const stale = stub.server.signedFor(HOST);
    stub.server.policy = { ...replay, issued_ms: 50, tools: [] };
    const fetches = stub.server.policyFetches;
    conn.send(JSON.stringify({ type: "policy", etag: policyEtag(stale), change: "chg_40", policy: stale }));
    await conn.next(ackOf("chg_40"));
    expect(stub.server.policyFetches).toBe(fetches + 1);
    expect(holder.policy?.policy.issued_ms).toBe(50);
    expect(holder.policy?.policy.tools).toEqual([]);
    const theirs = stub.server.signedFor("h-someone-else");
    conn.send(JSON.stringify({ type: "policy", etag: policyEtag(theirs), change: "chg_theirs", policy: theirs }));
    await conn.next(ackOf("chg_theirs"));
    expect(stub.server.policyFetches).toBe(fetches + 2);
    expect(holder.policy?.policy.host).toBe(HOST);
    expect(status).toMatchObject({ carried: 1, refused: 2 });
  });
});
