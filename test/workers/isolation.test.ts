import { beforeAll, describe, expect, it } from "vitest";
import { enrollHost, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let mine: { token: string; workspaceId: string };
let theirs: { token: string; workspaceId: string };
let theirHost: TestHost;
let theirRun: TestRun;

beforeAll(async () => {
  mine = await seedWorkspace();
  theirs = await seedWorkspace();
  theirHost = await enrollHost(theirs.token);
  theirRun = new TestRun(theirHost);
  theirRun.start();
  theirRun.stop();
  theirRun.lock(true);
  await ingest(theirHost, [theirRun.part(theirRun.frames, theirRun.locks)]);
});

describe("another workspace's resources answer 404 everywhere", () => {
  const cases: [string, string, () => string][] = [
    ["GET", "run", () => `/v1/runs/${theirRun.chain}`],
    ["GET", "frames", () => `/v1/runs/${theirRun.chain}/frames`],
    ["GET", "export", () => `/v1/runs/${theirRun.chain}/export`],
    ["POST", "seal", () => `/v1/runs/${theirRun.chain}/seal`],
    ["POST", "pause", () => `/v1/runs/${theirRun.chain}/pause`],
    ["POST", "resume", () => `/v1/runs/${theirRun.chain}/resume`],
    ["GET", "host", () => `/v1/hosts/${theirHost.id}`],
    ["GET", "host agents", () => `/v1/hosts/${theirHost.id}/agents`],
    ["POST", "suspend", () => `/v1/hosts/${theirHost.id}/suspend`],
    ["POST", "resume host", () => `/v1/hosts/${theirHost.id}/resume`],
    ["GET", "workspace", () => `/v1/workspaces/${theirs.workspaceId}`],
    ["GET", "workspace policy", () => `/v1/workspaces/${theirs.workspaceId}/policy`],
  ];
  for (const [method, what, path] of cases) {
    it(`${method} ${what}`, async () => {
      const res = await op(mine.token, path(), { method });
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: "not_found" });
    });
  }

  it("leaves their run, host and policy untouched, and lists none of it", async () => {
    const run = (await (await op(theirs.token, `/v1/runs/${theirRun.chain}`)).json()) as { status: string; paused: boolean };
    expect(run).toMatchObject({ status: "ended", paused: false });
    expect(await (await op(theirs.token, `/v1/hosts/${theirHost.id}`)).json()).toMatchObject({ status: "active" });
    expect(((await (await op(mine.token, "/v1/runs")).json()) as { runs: unknown[] }).runs).toEqual([]);
    expect(((await (await op(mine.token, "/v1/hosts")).json()) as { hosts: unknown[] }).hosts).toEqual([]);
    expect(((await (await op(mine.token, "/v1/agents")).json()) as { agents: unknown[] }).agents).toEqual([]);
    const patch = await op(mine.token, `/v1/workspaces/${theirs.workspaceId}`, { method: "PATCH", json: { mode: "observe" } });
    expect(patch.status).toBe(404);
    const tokens = (await (await op(mine.token, "/v1/tokens")).json()) as { tokens: unknown[] };
    expect(tokens.tokens).toHaveLength(1);
  });
});
