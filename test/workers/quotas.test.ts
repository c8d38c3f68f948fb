import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { AGENT_NAMES_PER_DAY, RUNS_PER_HOUR } from "../../workers/lib/quotas.ts";
import { enrollHost, hostCall, ingest, seedWorkspace, TestRun } from "./support.ts";

let token: string;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
});

describe("per-host quotas", () => {
  it(`refuses new runs past ${RUNS_PER_HOUR} an hour with 429 and Retry-After, storing nothing; runs it already has go on`, async () => {
    const host = await enrollHost(token);
    const existing = new TestRun(host);
    existing.start();
    expect((await ingest(host, [existing.part()])).status).toBe(200);
    // The host started RUNS_PER_HOUR - 2 more runs half an hour ago (as its object counted them).
    const startedAt = Date.now() - 30 * 60_000;
    const hostObject = env.HOSTS.get(env.HOSTS.idFromName(host.id));
    for (let i = 1; i <= RUNS_PER_HOUR - 2; i++) {
      expect(
        await hostObject.admit({ runs: [{ chain: `run_${i.toString(16).padStart(32, "0")}`, at: "seed" }], names: [] }, startedAt + i),
      ).toBeNull();
    }
    const a = new TestRun(host);
    const b = new TestRun(host);
    a.start();
    b.start();
    existing.tool();
    const res = await hostCall(host, "POST", "/v1/ingest", JSON.stringify({ chains: [existing.part(), a.part(), b.part()] }));
    expect(res.status).toBe(429);
    const retry = Number(res.headers.get("retry-after"));
    expect(retry).toBeGreaterThan(29 * 60);
    expect(retry).toBeLessThanOrEqual(30 * 60 + 1);
    const body = (await res.json()) as { error: string; issues: { chain: string }[] };
    expect(body.error).toBe("quota_exceeded");
    expect(body.issues.map((i) => i.chain).sort()).toEqual([a.chain, b.chain].sort());
    expect((await env.CHAINS.get(env.CHAINS.idFromName(existing.chain)).summary())?.frameCount).toBe(1);
    const alone = await ingest(host, [existing.part(), a.part()]);
    expect(alone.status).toBe(200);
  });

  it(`refuses more than ${AGENT_NAMES_PER_DAY} new agent names a day, from a report or a run`, async () => {
    const host = await enrollHost(token);
    const agents = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => ({ name: `agent-${from + i}`, pending_frames: 0, oldest_pending_ms: null, hooks_ok: true }));
    // Enrollment named claude-code: one name of the day's allowance is spent.
    expect((await hostCall(host, "POST", "/v1/host", JSON.stringify({ agents: agents(0, AGENT_NAMES_PER_DAY - 1) }))).status).toBe(200);
    const over = await hostCall(host, "POST", "/v1/host", JSON.stringify({ agents: agents(100, 1) }));
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(23 * 3600);
    const run = new TestRun(host, "s", "yet-another-agent");
    run.add("agent_start", { path: "hook", harness: "yet-another-agent", session_id: "s" });
    expect((await ingest(host, [run.part()])).status).toBe(429);
    const known = new TestRun(host, "s", "agent-3");
    known.add("agent_start", { path: "hook", harness: "agent-3", session_id: "s" });
    expect((await ingest(host, [known.part()])).status).toBe(200);
  });
});
