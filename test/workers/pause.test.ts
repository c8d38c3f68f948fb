import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_PAUSED_RUNS_PER_HOST, openPolicy, publicKeyOf, type SignedPolicy } from "../../protocol/index.ts";
import { db } from "../../workers/db/client.ts";
import { pausedRunsOf } from "../../workers/lib/host-policy.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";
import { enrollHost, hostCall, ingest, op, seedRuns, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let workspaceId: string;
let host: TestHost;

beforeAll(async () => {
  ({ token, workspaceId } = await seedWorkspace());
  host = await enrollHost(token);
});

async function policyOf(h: TestHost) {
  const res = await hostCall(h, "GET", "/v1/policy");
  expect(res.status).toBe(200);
  return openPolicy((await res.json()) as SignedPolicy, publicKeyOf(SERVER_SECRET));
}

async function liveRun(h: TestHost) {
  const run = new TestRun(h);
  run.start();
  await ingest(h, [run.part()]);
  return run;
}

describe("each host's policy carries only its own pause state", () => {
  it("names its host, and lists a paused run only in its own host's policy", async () => {
    const other = await enrollHost(token);
    const run = await liveRun(host);
    expect((await op(token, `/v1/runs/${run.chain}/pause`, { method: "POST" })).status).toBe(200);
    expect(await policyOf(host)).toMatchObject({ host: host.id, paused_runs: [run.chain], suspended_hosts: [] });
    expect(await policyOf(other)).toMatchObject({ host: other.id, paused_runs: [] });
    await op(token, `/v1/runs/${run.chain}/resume`, { method: "POST" });
    expect((await policyOf(host)).paused_runs).toEqual([]);
  });

  it("lets a sealed run leave the policy once the computer ends its session, or nothing came from it for 12 hours", async () => {
    const ended = await liveRun(host);
    const quiet = await liveRun(host);
    for (const run of [ended, quiet]) expect((await op(token, `/v1/runs/${run.chain}/seal`, { method: "POST" })).status).toBe(200);
    expect((await policyOf(host)).paused_runs.sort()).toEqual([ended.chain, quiet.chain].sort());
    // The agent went on after the seal (refused), then its session ended.
    ended.tool();
    ended.stop();
    expect((await ingest(host, [ended.part()])).body.chains[0]).toMatchObject({ status: "refused" });
    expect((await policyOf(host)).paused_runs).toEqual([quiet.chain]);
    expect(await pausedRunsOf(db(env), host.id, Date.now() + 13 * 60 * 60_000)).toEqual([]);
  });

  it("refuses a pause past the per-host limit with 409, and counts no run the computer has ended", async () => {
    const h = await enrollHost(token);
    const now = Date.now();
    const paused = { pausedMs: now, lastReceivedMs: now };
    const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
    await seedRuns(h, range(1, MAX_PAUSED_RUNS_PER_HOST - 1), () => ({ ...paused, status: "live" }));
    await seedRuns(h, range(5000, 500), () => ({ ...paused, status: "sealed", hostStopped: 1 }));
    await seedRuns(h, range(9000, 500), () => ({ ...paused, hostStopped: 1 }));
    const last = await liveRun(h);
    expect((await op(token, `/v1/runs/${last.chain}/pause`, { method: "POST" })).status).toBe(200);
    expect((await policyOf(h)).paused_runs).toHaveLength(MAX_PAUSED_RUNS_PER_HOST);
    const more = await liveRun(h);
    const refused = await op(token, `/v1/runs/${more.chain}/pause`, { method: "POST" });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: "too_many_paused" });
    expect((await op(token, `/v1/runs/${more.chain}/seal`, { method: "POST" })).status).toBe(409);
    expect((await op(token, `/v1/runs/${more.chain}`)).status).toBe(200);
    expect(await (await op(token, `/v1/runs/${more.chain}`)).json()).toMatchObject({ status: "live", paused: false });
  });
});

describe("a suspended host", () => {
  it("learns from its policy that it is suspended, and nothing of the workspace's clauses; its host routes answer 403", async () => {
    const h = await enrollHost(token);
    await op(token, `/v1/workspaces/${workspaceId}/policy`, {
      method: "PUT",
      json: {
        mode: "enforce",
        tools: [{ id: "secret-rule", tool: "Bash", decision: "deny", reason: "internal" }],
        default_tool_decision: "allow",
        models: null,
        budgets: [],
        retention: { mode: "keep", keep: ["prompt"] },
      },
    });
    await op(token, `/v1/hosts/${h.id}/suspend`, { method: "POST" });
    const p = await policyOf(h);
    expect(p).toMatchObject({ host: h.id, suspended_hosts: [h.id], tools: [], default_tool_decision: "deny", models: [] });
    for (const [method, path, body] of [
      ["GET", "/v1/host", ""],
      ["POST", "/v1/host", JSON.stringify({ agents: [] })],
      ["GET", `/v1/host/runs/run_${"0".repeat(32)}`, ""],
    ] as const) {
      const res = await hostCall(h, method, path, body);
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ error: "host_suspended" });
    }
    await op(token, `/v1/hosts/${h.id}/resume`, { method: "POST" });
    const back = await policyOf(h);
    expect(back).toMatchObject({ suspended_hosts: [], tools: [expect.objectContaining({ id: "secret-rule" })] });
    expect(back.issued_ms).toBeGreaterThan(p.issued_ms);
  });
});
