import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { openPolicy, publicKeyOf, ROUTES, type SignedPolicy, signRequest } from "../../protocol/index.ts";
import { connectedHosts } from "../../workers/lib/hubs.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";
import { BASE, enrollHost, hostCall, ingest, op, openPush, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let workspaceId: string;
let host: TestHost;

beforeAll(async () => {
  ({ token, workspaceId } = await seedWorkspace());
  host = await enrollHost(token);
});

const connect = openPush;

async function policyEtag(h: TestHost) {
  const res = await hostCall(h, "GET", "/v1/policy");
  return {
    etag: res.headers.get("etag")!.replaceAll('"', ""),
    policy: openPolicy((await res.json()) as SignedPolicy, publicKeyOf(SERVER_SECRET)),
  };
}

describe("policy push", () => {
  it("pushes a run's pause to its host's connection, naming the change and the ETag the host's policy now has", async () => {
    const conn = await connect(host);
    expect(conn.res.status).toBe(101);
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    const paused = await op(token, `/v1/runs/${run.chain}/pause`, { method: "POST" });
    expect(paused.status).toBe(200);
    const [first] = await conn.received(1);
    const now = await policyEtag(host);
    expect(first).toEqual({
      type: "policy",
      etag: now.etag,
      change: expect.stringMatching(/^chg_[0-9a-f]{32}$/),
      policy: expect.anything(),
    });
    // It carries the host's signed policy: the one a fetch answers now.
    expect(openPolicy(first!.policy!, publicKeyOf(SERVER_SECRET))).toEqual(now.policy);
    // The connection acknowledged it: the pause answered once the host's recorder had applied it.
    expect(await paused.json()).toEqual({
      id: run.chain,
      paused: true,
      propagation: { hosts: 1, applied: 1, not_applied: [], more: 0 },
    });
    expect(now.policy.paused_runs).toEqual([run.chain]);
    await op(token, `/v1/runs/${run.chain}/resume`, { method: "POST" });
    const second = (await conn.received(2))[1]!;
    expect(second.etag).toBe((await policyEtag(host)).etag);
    expect(second.etag).not.toBe(first!.etag);
    conn.ws!.close();
  });

  it("pushes every operator change that reaches a host's policy: policy, workspace mode, suspension, agent pause", async () => {
    const h = await enrollHost(token);
    const conn = await connect(h);
    const changes: [string, { method: string; json?: unknown }][] = [
      [`/v1/workspaces/${workspaceId}`, { method: "PATCH", json: { mode: "observe" } }],
      [`/v1/workspaces/${workspaceId}`, { method: "PATCH", json: { mode: "enforce" } }],
      [
        `/v1/workspaces/${workspaceId}/policy`,
        {
          method: "PUT",
          json: {
            mode: "enforce",
            tools: [{ id: "no-rm", tool: "Bash", command: "rm *", decision: "deny", reason: "no rm" }],
            default_tool_decision: "none",
            models: null,
            budgets: [],
            retention: { mode: "keep", keep: ["prompt"] },
          },
        },
      ],
      [`/v1/hosts/${h.id}/suspend`, { method: "POST" }],
      [`/v1/hosts/${h.id}/resume`, { method: "POST" }],
      ["/v1/agents/codex/pause", { method: "POST", json: { host: h.id } }],
      ["/v1/agents/codex/resume", { method: "POST", json: {} }],
    ];
    for (const [i, [path, init]] of changes.entries()) {
      expect((await op(token, path, init)).status, path).toBe(200);
      const got = await conn.received(i + 1);
      // Each names the host's new ETag and carries its signed policy, the one a fetch answers now.
      const now = await policyEtag(h);
      expect(got[i]!.etag, path).toBe(now.etag);
      expect(openPolicy(got[i]!.policy!, publicKeyOf(SERVER_SECRET)), path).toEqual(now.policy);
    }
    expect(conn.messages).toHaveLength(changes.length);
    conn.ws!.close();
  });

  it("names a connected computer whose recorder does not acknowledge within the wait as slow, one with no connection as offline", async () => {
    const { token: t } = await seedWorkspace();
    const quiet = await enrollHost(t);
    const gone = await enrollHost(t);
    const conn = await connect(quiet, undefined, { ack: false });
    const res = await op(t, "/v1/agents/codex/pause", { method: "POST", json: {} });
    expect(res.status).toBe(200);
    const { propagation } = (await res.json()) as { propagation: unknown };
    expect(propagation).toEqual({
      hosts: 2,
      applied: 0,
      not_applied: expect.arrayContaining([
        { host_id: quiet.id, hostname: "box", why: "slow" },
        { host_id: gone.id, hostname: "box", why: "offline" },
      ]),
      more: 0,
    });
    conn.ws!.close();
  });

  it("waits for every connected recorder of a workspace-wide change; an unenrolled computer is not waited for or counted", async () => {
    const { token: t } = await seedWorkspace();
    const [a, b, c] = [await enrollHost(t), await enrollHost(t), await enrollHost(t)];
    const [ca, cb] = [await connect(a), await connect(b)];
    expect((await op(t, `/v1/hosts/${c.id}`, { method: "DELETE" })).status).toBe(200);
    const res = await op(t, "/v1/agents/codex/pause", { method: "POST", json: {} });
    expect(((await res.json()) as { propagation: unknown }).propagation).toEqual({ hosts: 2, applied: 2, not_applied: [], more: 0 });
    // Each connection heard the one announcement once, and acknowledged it.
    expect([(await ca.received(1))[0]!.change]).toEqual([(await cb.received(1))[0]!.change]);
    ca.ws!.close();
    cb.ws!.close();
  });

  it("counts an acknowledgement only for the host whose connection sent it", async () => {
    const { token: t } = await seedWorkspace();
    const [target, other] = [await enrollHost(t), await enrollHost(t)];
    const silent = await connect(target, undefined, { ack: false });
    const forger = await connect(other, undefined, { ack: false });
    const run = new TestRun(target);
    run.start();
    await ingest(target, [run.part()]);
    const pausing = op(t, `/v1/runs/${run.chain}/pause`, { method: "POST" });
    const [msg] = await silent.received(1);
    // Another computer sends the change's id as if it were the target's recorder.
    forger.ack(msg!.change);
    const { propagation } = (await (await pausing).json()) as { propagation: unknown };
    expect(propagation).toEqual({ hosts: 1, applied: 0, not_applied: [{ host_id: target.id, hostname: "box", why: "slow" }], more: 0 });
    silent.ws!.close();
    forger.ws!.close();
  });

  it("refuses a connection with a bad signature, a replayed nonce, or from a suspended host, and keeps none of them", async () => {
    const h = await enrollHost(token);
    const before = await connectedHosts(env, workspaceId);
    const bad = await connect(h, (s) => ({ ...s, "x-oxagen-signature": "0".repeat(128) }));
    expect(bad.res.status).toBe(401);
    expect(await bad.res.json()).toMatchObject({ error: "bad_signature" });
    const auth = signRequest(h.secret, {
      origin: BASE,
      method: "GET",
      pathAndQuery: ROUTES.push,
      hostId: h.id,
      headers: {},
      body: new Uint8Array(),
    });
    const first = await connect(h, () => auth);
    expect(first.res.status).toBe(101);
    first.ws!.close();
    const replay = await connect(h, () => auth);
    expect(replay.res.status).toBe(401);
    expect(await replay.res.json()).toMatchObject({ error: "replayed" });
    await op(token, `/v1/hosts/${h.id}/suspend`, { method: "POST" });
    const suspended = await connect(h);
    expect(suspended.res.status).toBe(403);
    expect(await suspended.res.json()).toMatchObject({ error: "host_suspended" });
    expect((await connectedHosts(env, workspaceId)).filter((x) => x === h.id && !before.includes(x))).toEqual([]);
  });

  it("answers a plain GET with 426 and no connection", async () => {
    const res = await hostCall(host, "GET", ROUTES.push);
    expect(res.status).toBe(426);
    expect(await res.json()).toMatchObject({ error: "upgrade_required" });
  });

  it("answers the recorder's ping without a push", async () => {
    const conn = await connect(host);
    const pong = new Promise<unknown>((r) => conn.ws!.addEventListener("message", (ev) => r(ev.data), { once: true }));
    conn.ws!.send("ping");
    expect(await pong).toBe("pong");
    expect(conn.messages).toEqual([]);
    conn.ws!.close();
  });
});
