import { beforeAll, describe, expect, it } from "vitest";
import { openPolicy, policyEtag, publicKeyOf, type SignedPolicy } from "../../protocol/index.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";
import { enrollHost, hostCall, op, seedWorkspace, type TestHost } from "./support.ts";

let token: string;
let workspaceId: string;
let host: TestHost;

beforeAll(async () => {
  ({ token, workspaceId } = await seedWorkspace());
  host = await enrollHost(token);
});

describe("policy", () => {
  it("serves the workspace policy signed by the server key, with an ETag and 304", async () => {
    const res = await hostCall(host, "GET", "/v1/policy");
    expect(res.status).toBe(200);
    const signed = (await res.json()) as SignedPolicy;
    const policy = openPolicy(signed, publicKeyOf(SERVER_SECRET));
    expect(policy).toMatchObject({ workspace: workspaceId, mode: "enforce", paused_runs: [], suspended_hosts: [] });
    expect(res.headers.get("etag")).toBe(`"${policyEtag(signed)}"`);
    const cached = await hostCall(host, "GET", "/v1/policy", "", { "if-none-match": res.headers.get("etag")! });
    expect(cached.status).toBe(304);
  });

  it("lets an operator replace the policy; the host sees the new one and a new ETag", async () => {
    const before = (await hostCall(host, "GET", "/v1/policy")).headers.get("etag");
    const put = await op(token, `/v1/workspaces/${workspaceId}/policy`, {
      method: "PUT",
      json: {
        mode: "observe",
        tools: [{ id: "no-rm", tool: "Bash", command: "rm -rf *", decision: "deny", reason: "no" }],
        default_tool_decision: "ask",
        models: ["claude-*"],
        budgets: [{ id: "b", scope: "run", window: "run", limit_microusd: 1000 }],
        retention: { mode: "keep", keep: ["prompt"] },
      },
    });
    expect(put.status).toBe(200);
    const res = await hostCall(host, "GET", "/v1/policy", "", { "if-none-match": before! });
    expect(res.status).toBe(200);
    const policy = openPolicy((await res.json()) as SignedPolicy, publicKeyOf(SERVER_SECRET));
    expect(policy).toMatchObject({ mode: "observe", default_tool_decision: "ask", models: ["claude-*"] });
    expect(await (await op(token, `/v1/workspaces/${workspaceId}`)).json()).toMatchObject({
      mode: "observe",
      retention: { mode: "keep", keep: ["prompt"] },
    });
  });

  it("refuses a malformed policy and changes nothing", async () => {
    const before = await (await op(token, `/v1/workspaces/${workspaceId}/policy`)).json();
    const res = await op(token, `/v1/workspaces/${workspaceId}/policy`, { method: "PUT", json: { mode: "sometimes" } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "invalid_request", issues: expect.anything() });
    expect(await (await op(token, `/v1/workspaces/${workspaceId}/policy`)).json()).toEqual(before);
  });

  it("updates workspace settings and mirrors them into the policy", async () => {
    const res = await op(token, `/v1/workspaces/${workspaceId}`, {
      method: "PATCH",
      json: { mode: "enforce", retention: { mode: "digest_only", keep: [] } },
    });
    expect(await res.json()).toMatchObject({ mode: "enforce", retention: { mode: "digest_only" } });
    const policy = (
      (await (await op(token, `/v1/workspaces/${workspaceId}/policy`)).json()) as { policy: { retention: { mode: string }; mode: string } }
    ).policy;
    expect(policy).toMatchObject({ mode: "enforce", retention: { mode: "digest_only" } });
  });
});
