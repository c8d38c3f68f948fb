import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openPolicy, type Policy, policyEtag, publicKeyOf } from "../../protocol/index.ts";
import { hubOf } from "../../workers/lib/hubs.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";
import { enrollHost, hostCall, ingest, op, openPush, seedWorkspace, type TestHost, TestRun } from "./support.ts";

const serverKey = publicKeyOf(SERVER_SECRET);

const basePolicy = {
  mode: "enforce",
  tools: [],
  default_tool_decision: "none",
  models: null,
  budgets: [] as unknown[],
  retention: { mode: "keep", keep: ["prompt"] },
};

async function fetched(h: TestHost): Promise<{ etag: string; policy: Policy }> {
  const res = await hostCall(h, "GET", "/v1/policy");
  const body = (await res.json()) as Parameters<typeof openPolicy>[0];
  return { etag: policyEtag(body), policy: openPolicy(body, serverKey) };
}

describe("a workspace-wide change carries each host its own signed policy", () => {
  it("one announcement; each connection gets the policy its own fetch answers (its paused runs, its suspension), on whichever hub", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const hosts = [];
    for (let i = 0; i < 6; i++) hosts.push(await enrollHost(token));
    const [paused, suspended] = [hosts[0]!, hosts[1]!];
    const conns: Awaited<ReturnType<typeof openPush>>[] = [];
    for (const h of hosts) conns.push(await openPush(h));
    // Host-specific parts changed after the connections opened: the hubs' copies follow them.
    const run = new TestRun(paused);
    run.start();
    await ingest(paused, [run.part()]);
    expect((await op(token, `/v1/runs/${run.chain}/pause`, { method: "POST" })).status).toBe(200);
    expect((await op(token, `/v1/hosts/${suspended.id}/suspend`, { method: "POST" })).status).toBe(200);
    const before = conns.map((c) => c.messages.length);

    const res = await op(token, `/v1/workspaces/${workspaceId}/policy`, {
      method: "PUT",
      json: { ...basePolicy, tools: [{ id: "no-rm", tool: "Bash", command: "rm *", decision: "deny", reason: "no rm" }] },
    });
    expect(res.status).toBe(200);
    const changes = new Set<string>();
    for (const [i, h] of hosts.entries()) {
      const msg = (await conns[i]!.received(before[i]! + 1))[before[i]!]!;
      changes.add(msg.change);
      const now = await fetched(h);
      expect(msg.policy, h.id).toBeDefined();
      const pushed = openPolicy(msg.policy!, serverKey);
      expect(pushed, h.id).toEqual(now.policy);
      expect(msg.etag).toBe(now.etag);
      expect(pushed.host).toBe(h.id);
    }
    expect(changes.size).toBe(1);
    const policyOf = (i: number) => openPolicy(conns[i]!.messages.at(-1)!.policy!, serverKey);
    expect(policyOf(0).paused_runs).toEqual([run.chain]);
    expect(policyOf(0).tools).toHaveLength(1);
    expect(policyOf(1).suspended_hosts).toEqual([suspended.id]);
    expect(policyOf(1).tools).toEqual([]);
    expect(policyOf(2).paused_runs).toEqual([]);
    expect(((await res.json()) as { propagation: unknown }).propagation).toMatchObject({ hosts: 6, applied: 6 });
    for (const c of conns) c.ws!.close();
  });

  it("a run's pause lifted when the run ends leaves the host's pushed policy too", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const h = await enrollHost(token);
    const conn = await openPush(h);
    const run = new TestRun(h);
    run.start();
    await ingest(h, [run.part()]);
    await op(token, `/v1/runs/${run.chain}/pause`, { method: "POST" });
    await ingest(h, [run.part([run.stop()])]);
    const n = conn.messages.length;
    await op(token, `/v1/workspaces/${workspaceId}/policy`, { method: "PUT", json: basePolicy });
    const msg = (await conn.received(n + 1))[n]!;
    expect(openPolicy(msg.policy!, serverKey).paused_runs).toEqual([]);
    expect(openPolicy(msg.policy!, serverKey)).toEqual((await fetched(h)).policy);
    conn.ws!.close();
  });

  it("announces `*` with no policy when the hub cannot make every host's exactly (a per-host budget of 0): each recorder fetches", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const h = await enrollHost(token);
    const conn = await openPush(h);
    const budgets = [{ id: "some", scope: "host", window: "day", limit_microusd: 1_000_000 }];
    await op(token, `/v1/workspaces/${workspaceId}/policy`, { method: "PUT", json: { ...basePolicy, budgets } });
    const [carried] = await conn.received(1);
    expect(openPolicy(carried!.policy!, serverKey)).toEqual((await fetched(h)).policy);
    budgets.push({ id: "none", scope: "host", window: "day", limit_microusd: 0 });
    await op(token, `/v1/workspaces/${workspaceId}/policy`, { method: "PUT", json: { ...basePolicy, budgets } });
    const msg = (await conn.received(2))[1];
    expect(msg).toEqual({ type: "policy", etag: "*", change: expect.any(String) });
    expect((await fetched(h)).policy.exhausted_budgets).toMatchObject([{ budget: "none", spent_microusd: 0 }]);
    conn.ws!.close();
  });
});

describe("a hub's copy of a host", () => {
  it("keeps the newest version it was handed: an older copy arriving late changes nothing; a copy it cannot make a policy from is `*`", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const h = await enrollHost(token);
    const conn = await openPush(h);
    const hub = hubOf(env, workspaceId, h.id);
    const part = { pausedRuns: [] as string[], pausedAgents: [], policyMs: 0 };
    const newer = `run_${"a".repeat(32)}`;
    await hub.hostCopy(h.id, { status: "active", part: { ...part, pausedRuns: [newer] }, version: Number.MAX_SAFE_INTEGER - 1 });
    await hub.hostCopy(h.id, {
      status: "active",
      part: { ...part, pausedRuns: [`run_${"b".repeat(32)}`] },
      version: Number.MAX_SAFE_INTEGER - 2,
    });
    await op(token, `/v1/workspaces/${workspaceId}/policy`, { method: "PUT", json: basePolicy });
    const [msg] = await conn.received(1);
    expect(openPolicy(msg!.policy!, serverKey).paused_runs).toEqual([newer]);
    await hub.hostCopy(h.id, { status: "active", part: { ...part, pausedRuns: ["not a run id"] }, version: Number.MAX_SAFE_INTEGER });
    await op(token, `/v1/workspaces/${workspaceId}/policy`, { method: "PUT", json: basePolicy });
    expect((await conn.received(2))[1]).toEqual({ type: "policy", etag: "*", change: expect.any(String) });
    conn.ws!.close();
  });
});
