import { beforeAll, describe, expect, it } from "vitest";
import { enrollHost, hostCall, ingest, op, seedWorkspace, TestRun, type TestHost, hostPolicyOf } from "./support.ts";

let token: string;
let one: TestHost;
let two: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  one = await enrollHost(token);
  two = await enrollHost(token);
  // The custom agent `refunds` has run on host one only.
  const run = new TestRun(one, "s1", "refunds");
  run.start();
  await ingest(one, [run.part()]);
});

const pausedAgents = async (h: TestHost) => (await hostPolicyOf(h)).paused_agents ?? [];

const post = (path: string, json: unknown = {}) => op(token, path, { method: "POST", json });

describe("pausing an agent", () => {
  it("pauses a name on every host of the workspace, lists it in each host's policy and in the Wrapped agents list, and resumes it", async () => {
    const res = await post("/v1/agents/refunds/pause");
    expect(res.status).toBe(200);
    // Neither host holds a push connection: both are named offline (the pause reaches them when they fetch).
    expect(await res.json()).toEqual({
      name: "refunds",
      host: null,
      paused: true,
      pauses: [{ host: "*", paused_ms: expect.any(Number) }],
      propagation: { hosts: 2, applied: 0, not_applied: expect.arrayContaining([expect.objectContaining({ why: "offline" })]), more: 0 },
    });
    expect(await pausedAgents(one)).toEqual(["refunds"]);
    expect(await pausedAgents(two)).toEqual(["refunds"]);
    const list = (await (await op(token, "/v1/agents")).json()) as { agents: { host_id: string; name: string; paused: boolean }[] };
    expect(list.agents.find((a) => a.host_id === one.id && a.name === "refunds")).toMatchObject({ paused: true });
    expect(list.agents.find((a) => a.host_id === one.id && a.name === "claude-code")).toMatchObject({ paused: false });
    expect((await post("/v1/agents/refunds/resume")).status).toBe(200);
    expect(await pausedAgents(one)).toEqual([]);
  });

  it("pauses a harness on one host only; resuming that host leaves a workspace-wide pause standing", async () => {
    expect((await post("/v1/agents/codex/pause", { host: two.id })).status).toBe(200);
    expect(await pausedAgents(two)).toEqual(["codex"]);
    expect(await pausedAgents(one)).toEqual([]);
    await post("/v1/agents/codex/pause");
    const resumed = await post("/v1/agents/codex/resume", { host: two.id });
    expect(await resumed.json()).toMatchObject({ name: "codex", host: two.id, paused: true, pauses: [{ host: "*" }] });
    expect(await pausedAgents(two)).toEqual(["codex"]);
    await post("/v1/agents/codex/resume");
    expect(await pausedAgents(two)).toEqual([]);
  });

  it("leaves paused_agents and exhausted_budgets out of a policy with none, so a collector from before them still opens it", async () => {
    const res = await hostCall(two, "GET", "/v1/policy");
    const payload = JSON.parse(((await res.json()) as { payload: string }).payload) as Record<string, unknown>;
    expect(payload).not.toHaveProperty("paused_agents");
    expect(payload).not.toHaveProperty("exhausted_budgets");
  });

  it("moves the host policy's issued_ms on, so a collector never takes the older policy back", async () => {
    const before = await hostPolicyOf(one);
    await post("/v1/agents/claude-code/pause", { host: one.id });
    const after = await hostPolicyOf(one);
    expect(after.issued_ms).toBeGreaterThan(before.issued_ms);
    await post("/v1/agents/claude-code/resume", { host: one.id });
  });

  it("refuses an unknown agent or host with 404, a bad name or body with 400 naming the field, and changes nothing", async () => {
    const cases: [string, unknown, number, string?][] = [
      ["/v1/agents/never-seen/pause", {}, 404],
      ["/v1/agents/refunds/pause", { host: "host_nope" }, 404],
      ["/v1/agents/Not%20A%20Name/pause", {}, 400, "name"],
      ["/v1/agents/refunds/pause", { host: 7 }, 400, "host"],
      ["/v1/agents/refunds/pause", { hosts: [one.id] }, 400],
    ];
    for (const [path, json, status, field] of cases) {
      const res = await post(path, json);
      expect(res.status, path).toBe(status);
      const body = (await res.json()) as { error: string; issues?: { fieldErrors?: Record<string, unknown>; formErrors?: string[] } };
      if (field) expect(Object.keys(body.issues?.fieldErrors ?? {}), path).toContain(field);
    }
    expect(await pausedAgents(one)).toEqual([]);
    const read = await op(token, "/v1/agents");
    expect(read.status).toBe(200);
  });
});
