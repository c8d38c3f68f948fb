import { env } from "cloudflare:workers";
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { ChainWriter, openPolicy, publicKeyOf, type SignedPolicy, verifyBundle } from "../../protocol/index.ts";
import worker from "../../workers/index.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";
import { enrollHost, hostCall, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;
const SERVER_PUBLIC = publicKeyOf(SERVER_SECRET);

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
});

async function runCron(scheduledTime: number) {
  const controller = createScheduledController({ scheduledTime, cron: "*/5 * * * *" });
  const ctx = createExecutionContext();
  await worker.scheduled(controller, env, ctx);
  await waitOnExecutionContext(ctx);
}

async function currentPolicy(): Promise<ReturnType<typeof openPolicy>> {
  const res = await hostCall(host, "GET", "/v1/policy");
  return openPolicy((await res.json()) as SignedPolicy, SERVER_PUBLIC);
}

const runView = async (chain: string) => (await (await op(token, `/v1/runs/${chain}`)).json()) as Record<string, unknown>;

describe("runs", () => {
  it("refuses to export a live run, then exports it once ended and the bundle verifies (exit 0)", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool("ls -la");
    run.lock();
    await ingest(host, [run.part(run.frames, run.locks)]);
    const live = await op(token, `/v1/runs/${run.chain}/export`);
    expect(live.status).toBe(409);
    expect(await live.json()).toMatchObject({ error: "not_exportable" });
    for (const [sha, text] of run.bodies) {
      const put = await hostCall(host, "PUT", `/v1/bodies/${sha}`, text, {
        "x-oxagen-run": run.chain,
        "x-oxagen-role": "tool_input",
        "content-type": "application/octet-stream",
      });
      expect(put.status).toBe(201);
    }
    const from = run.frames.length;
    run.stop();
    run.lock(true);
    await ingest(host, [run.part(run.frames.slice(from), run.locks.slice(1))]);
    const res = await op(token, `/v1/runs/${run.chain}/export`);
    expect(res.status).toBe(200);
    const bundle = await res.text();
    const result = verifyBundle(bundle, {
      serverKey: SERVER_PUBLIC,
      body: (sha) => (run.bodies.has(sha) ? new TextEncoder().encode(run.bodies.get(sha)) : null),
    });
    expect(result.findings).toEqual([]);
    expect(result.exit).toBe(0);
    expect(result.summary).toMatchObject({ frames: 3, finalLocked: true, bodiesChecked: 1 });
  });

  it("tells a host whether the server holds one of its runs, and nobody else", async () => {
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part(run.frames, [])]);
    const mine = await hostCall(host, "GET", `/v1/host/runs/${run.chain}`);
    expect(mine.status).toBe(200);
    expect(await mine.json()).toEqual({ id: run.chain, status: "live", frame_count: 1 });
    expect((await hostCall(host, "GET", "/v1/host/runs/run_00000000000000000000000000000000")).status).toBe(404);
    const other = await enrollHost(token);
    const theirs = await hostCall(other, "GET", `/v1/host/runs/${run.chain}`);
    expect(theirs.status).toBe(404);
    expect(await theirs.json()).toMatchObject({ error: "not_found" });
  });

  it("lists kept bodies that never arrived as missing_bodies in the export", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool("never sent");
    run.stop();
    run.lock(true);
    await ingest(host, [run.part(run.frames, run.locks)]);
    const bundle = await (await op(token, `/v1/runs/${run.chain}/export`)).text();
    const result = verifyBundle(bundle, { serverKey: SERVER_PUBLIC });
    expect(result.exit).toBe(3);
    expect(result.findings.map((f) => f.code)).toEqual(["GAPS"]);
    expect(bundle).toContain('"kind":"missing_bodies","source":"server"');
  });

  it("seals a run: server final lock, status sealed, run paused in policy, later frames refused and recorded", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    await ingest(host, [run.part()]);
    const sealed = await op(token, `/v1/runs/${run.chain}/seal`, { method: "POST" });
    expect(sealed.status).toBe(200);
    expect(await sealed.json()).toMatchObject({ status: "sealed", lock_count: 1 });
    expect((await currentPolicy()).paused_runs).toContain(run.chain);
    run.tool();
    const after = await ingest(host, [run.part()]);
    expect(after.body.chains[0]).toMatchObject({ status: "refused", stored: 2, duplicates: [0, 1] });
    const view = (await runView(run.chain)) as { gaps: { kind: string; from_seq?: number }[]; frame_count: number };
    expect(view.frame_count).toBe(2);
    expect(view.gaps).toContainEqual(expect.objectContaining({ kind: "frames_after_seal", from_seq: 2 }));
    const bundle = await (await op(token, `/v1/runs/${run.chain}/export`)).text();
    const result = verifyBundle(bundle, { serverKey: SERVER_PUBLIC });
    expect(result.findings.filter((f) => f.severity === "tamper")).toEqual([]);
    expect(result.summary.finalLocked).toBe(true);
    const again = await op(token, `/v1/runs/${run.chain}/seal`, { method: "POST" });
    expect(await again.json()).toMatchObject({ status: "sealed", lock_count: 1 });
    expect((await op(token, `/v1/runs/${run.chain}/resume`, { method: "POST" })).status).toBe(409);
  });

  it("pauses and resumes a run through the policy", async () => {
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    // No push connection here: the answer says its computer is offline (it learns the pause when it fetches).
    expect(await (await op(token, `/v1/runs/${run.chain}/pause`, { method: "POST" })).json()).toEqual({
      id: run.chain,
      paused: true,
      propagation: { hosts: 1, applied: 0, not_applied: [{ host_id: host.id, hostname: "box", why: "offline" }], more: 0 },
    });
    expect((await currentPolicy()).paused_runs).toContain(run.chain);
    expect(await runView(run.chain)).toMatchObject({ paused: true });
    await op(token, `/v1/runs/${run.chain}/resume`, { method: "POST" });
    expect((await currentPolicy()).paused_runs).not.toContain(run.chain);
  });

  it("cron closes a run quiet for 12 hours as unknown; it cannot be exported; the next frame reopens it", async () => {
    const run = new TestRun(host);
    run.start();
    await ingest(host, [run.part()]);
    const now = Date.now();
    await runCron(now + 60 * 60_000);
    expect(await runView(run.chain)).toMatchObject({ status: "live" });
    await runCron(now + 13 * 60 * 60_000);
    expect(await runView(run.chain)).toMatchObject({ status: "closed", outcome: { value: "unknown" }, recorded_outcome: "unknown" });
    await runCron(now + 13 * 60 * 60_000);
    expect(await runView(run.chain)).toMatchObject({ status: "closed" });
    const exp = await op(token, `/v1/runs/${run.chain}/export`);
    expect(exp.status).toBe(409);
    expect(((await exp.json()) as { message: string }).message).toContain("closed");
    run.tool();
    await ingest(host, [run.part([run.frames[1]!])]);
    expect(await runView(run.chain)).toMatchObject({
      status: "live",
      outcome: { value: "running" },
      recorded_outcome: null,
      frame_count: 2,
    });
  });

  it("lists runs with filters and pages", async () => {
    const { token: t2 } = await seedWorkspace();
    const h2 = await enrollHost(t2);
    const chains: string[] = [];
    for (let i = 0; i < 5; i++) {
      const run = new TestRun(h2);
      run.t += i * 10_000;
      run.start();
      if (i % 2 === 0) run.stop();
      await ingest(h2, [run.part()]);
      chains.push(run.chain);
    }
    const all = (await (await op(t2, "/v1/runs?limit=2")).json()) as { runs: { id: string }[]; next: string | null };
    expect(all.runs.map((r) => r.id)).toEqual([chains[4], chains[3]]);
    const page2 = (await (await op(t2, `/v1/runs?limit=2&cursor=${all.next}`)).json()) as { runs: { id: string }[]; next: string };
    expect(page2.runs.map((r) => r.id)).toEqual([chains[2], chains[1]]);
    const ended = (await (await op(t2, "/v1/runs?status=ended")).json()) as { runs: { id: string }[] };
    expect(ended.runs.map((r) => r.id).sort()).toEqual([chains[0], chains[2], chains[4]].sort());
    const byHost = (await (await op(t2, `/v1/runs?host=${h2.id}&tier=observe&agent=claude-code`)).json()) as { runs: unknown[] };
    expect(byHost.runs).toHaveLength(5);
    // Live runs have no agent_stop: an unobserved tail holds them at inspect; ended runs with no gap reach view.
    const inspect = (await (await op(t2, "/v1/runs?grade=inspect")).json()) as { runs: { id: string }[] };
    expect(inspect.runs.map((r) => r.id)).toEqual([chains[3], chains[1]]);
    const window = (await (await op(t2, `/v1/runs?from=1767225600000&to=${1_767_225_600_000 + 21_000}`)).json()) as {
      runs: { id: string }[];
    };
    expect(window.runs.map((r) => r.id)).toEqual([chains[1], chains[0]]);
    const none = (await (await op(t2, `/v1/runs?host=${host.id}`)).json()) as { runs: unknown[] };
    expect(none.runs).toHaveLength(0);
    const bad = await op(t2, "/v1/runs?status=nope");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: "invalid_request" });
  });
});

describe("a computer's own chain", () => {
  it("is readable by the workspace's operators at /v1/runs/host_<id>/frames (calls tied to no session), and by nobody else's", async () => {
    const { token } = await seedWorkspace();
    const host = await enrollHost(token);
    const chain = `host_${host.id}`;
    const writer = new ChainWriter(chain);
    const { frame } = writer.append(
      "error",
      { path: "gateway", code: "unknown_path", forwarded: false, status: 404, vendor: "anthropic" },
      1_767_225_600_000,
    );
    expect((await ingest(host, [{ chain, frames: [frame], locks: [] }])).status).toBe(200);
    const res = await op(token, `/v1/runs/host_${host.id}/frames`);
    expect(res.status).toBe(200);
    const page = (await res.json()) as { frames: { kind: string; seq: number }[] };
    expect(page.frames.map((f) => [f.seq, f.kind])).toEqual([[0, "error"]]);
    // Another workspace's operator: no such host, as for a run of another workspace.
    const other = await seedWorkspace();
    expect((await op(other.token, `/v1/runs/host_${host.id}/frames`)).status).toBe(404);
    expect((await op(token, "/v1/runs/host_/frames")).status).toBe(400);
  });
});
