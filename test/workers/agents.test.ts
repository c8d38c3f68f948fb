import { env } from "cloudflare:workers";
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { db, schema } from "../../workers/db/client.ts";
import worker from "../../workers/index.ts";
import { agentHealth } from "../../workers/lib/health.ts";
import { enrollHost, hostCall, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token, undefined, ["claude-code", "codex"]);
});

type AgentView = { name: string; kind: string; health: string; reason: string };
const agents = async () => ((await (await op(token, `/v1/hosts/${host.id}/agents`)).json()) as { agents: AgentView[] }).agents;
const byName = async (name: string) => (await agents()).find((a) => a.name === name);

describe("wrapped agents", () => {
  it("shows wrapped harnesses idle, the others not wrapped", async () => {
    const list = await agents();
    expect(list.map((a) => [a.name, a.health])).toEqual([
      ["claude-code", "idle"],
      ["codex", "idle"],
      ["cursor", "not_wrapped"],
      ["stella", "not_wrapped"],
    ]);
  });

  it("is healthy once a run is delivered, pending while the server waits on a hole, degraded when refused", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    run.tool();
    await ingest(host, [run.part([run.frames[0]!])]);
    expect(await byName("claude-code")).toMatchObject({ health: "healthy" });
    await ingest(host, [run.part([run.frames[2]!])]);
    expect(await byName("claude-code")).toMatchObject({ health: "pending" });
    await ingest(host, [run.part([run.frames[1]!])]);
    expect(await byName("claude-code")).toMatchObject({ health: "healthy" });
    await ingest(host, [run.part([{ ...run.frames[1]!, t: 1 }])]);
    expect(await byName("claude-code")).toMatchObject({ health: "degraded", reason: expect.stringContaining("refused") });
  });

  it("lists a custom agent by the harness label it sent", async () => {
    const run = new TestRun(host, "s-1", "stripe-refunds");
    run.add("agent_start", { path: "hook", harness: "stripe-refunds", session_id: "s-1" });
    await ingest(host, [run.part()]);
    expect(await byName("stripe-refunds")).toMatchObject({ kind: "custom", health: "healthy" });
    const all = (await (await op(token, "/v1/agents")).json()) as { agents: AgentView[] };
    expect(all.agents.some((a) => a.name === "stripe-refunds")).toBe(true);
  });

  it("takes the collector's report: missing hooks degrade, pending data is pending, then degraded by the cron after 10 minutes", async () => {
    const report = (agents: unknown[]) => hostCall(host, "POST", "/v1/host", JSON.stringify({ agents }));
    expect((await report([{ name: "codex", pending_frames: 0, oldest_pending_ms: null, hooks_ok: false }])).status).toBe(200);
    expect(await byName("codex")).toMatchObject({ health: "degraded", reason: expect.stringContaining("hooks") });
    const now = Date.now();
    await report([{ name: "codex", pending_frames: 12, oldest_pending_ms: now - 60_000, hooks_ok: true }]);
    expect(await byName("codex")).toMatchObject({ health: "pending" });
    const own = (await (await hostCall(host, "GET", "/v1/host")).json()) as { agents: { name: string; health: string }[] };
    expect(own.agents.find((a) => a.name === "codex")).toMatchObject({ health: "pending" });
    const controller = createScheduledController({ scheduledTime: now + 11 * 60_000, cron: "*/5 * * * *" });
    const ctx = createExecutionContext();
    await worker.scheduled(controller, env, ctx);
    await waitOnExecutionContext(ctx);
    expect(await byName("codex")).toMatchObject({ health: "degraded", reason: expect.stringContaining("10 minutes") });
    const h = await db(env).select().from(schema.hosts).where(eq(schema.hosts.id, host.id)).get();
    expect(h?.degradedMs).toBe(now + 11 * 60_000);
    await report([{ name: "codex", pending_frames: 0, oldest_pending_ms: null, hooks_ok: true }]);
    expect(await byName("codex")).toMatchObject({ health: "idle" });
    expect((await report([{ name: "Bad Name", pending_frames: 0, oldest_pending_ms: null, hooks_ok: true }])).status).toBe(400);
  });

  it("is down when the collector has not called for over 15 minutes", () => {
    const now = Date.now();
    const hostRow = {
      id: "h",
      workspaceId: "w",
      publicKey: "",
      keyId: "",
      hostname: "",
      status: "active" as const,
      enrolledMs: 0,
      lastSeenMs: now - 16 * 60_000,
      degradedMs: null,
    };
    const agent = {
      hostId: "h",
      name: "codex",
      workspaceId: "w",
      kind: "harness" as const,
      wrappedMs: 0,
      firstSeenMs: 1,
      lastSeenMs: 1,
      lastDeliveredMs: 1,
      pendingSinceMs: null,
      lastRefusedMs: null,
      hooksMissing: 0,
      degradedMs: null,
    };
    expect(agentHealth(agent, hostRow, now).state).toBe("down");
    expect(agentHealth(agent, { ...hostRow, lastSeenMs: now }, now).state).toBe("healthy");
    expect(agentHealth(null, hostRow, now).state).toBe("not_wrapped");
  });
});
