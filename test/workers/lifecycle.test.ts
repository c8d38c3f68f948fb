import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_BATCH_FRAMES } from "../../protocol/index.ts";
import { enrollHost, hostCall, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
});

const view = async (chain: string) =>
  (await (await op(token, `/v1/runs/${chain}`)).json()) as {
    status: string;
    outcome: { value: string; reason: string };
    recorded_outcome: string | null;
    gaps: { kind: string; source: string; seq?: number }[];
    grade: { value: string; reason: string };
    gap_count: number;
  };

describe("run lifecycle and gaps", () => {
  it("lists every telemetry_gap the computer sent, and an unobserved_tail gap makes the run crashed", async () => {
    const run = new TestRun(host);
    run.start();
    run.add("telemetry_gap", { path: "recorder", cause: "daemon_down", from_ms: 1, to_ms: 2 });
    await ingest(host, [run.part()]);
    let v = await view(run.chain);
    expect(v.status).toBe("live");
    expect(v.gaps).toContainEqual({ kind: "daemon_down", source: "computer", seq: 1, detail: expect.any(String) });
    expect(v.grade.value).toBe("inspect");
    run.add("telemetry_gap", { path: "recorder", cause: "unobserved_tail" });
    await ingest(host, [run.part([run.frames[2]!])]);
    v = await view(run.chain);
    expect(v).toMatchObject({ status: "crashed", outcome: { value: "crashed" }, recorded_outcome: "crashed" });
    expect(v.gaps.filter((g) => g.source === "computer").map((g) => g.kind)).toEqual(["daemon_down", "unobserved_tail"]);
  });

  it("refuses frames after a host's final lock and records them; the final lock stands", async () => {
    const run = new TestRun(host);
    run.start();
    run.stop();
    run.lock(true);
    await ingest(host, [run.part(run.frames, run.locks)]);
    const late = { ...run.frames[1]!, seq: 2, t: run.t + 50 };
    const res = await ingest(host, [run.part([late])]);
    expect(res.body.chains[0]).toMatchObject({ status: "refused", stored: 2 });
    const v = await view(run.chain);
    expect(v).toMatchObject({ status: "ended", outcome: { value: "completed" }, recorded_outcome: "completed" });
    expect(v.gaps).toContainEqual(expect.objectContaining({ kind: "broken_chain", source: "server" }));
  });

  it("refuses a batch over the frame or byte limits with 413 and stores nothing", async () => {
    const run = new TestRun(host);
    run.start();
    const parts = [run.part(Array(MAX_BATCH_FRAMES).fill(run.frames[0])), { chain: `host_${host.id}`, frames: [run.frames[0]], locks: [] }];
    const tooMany = await ingest(host, parts);
    expect(tooMany.status).toBe(413);
    const big = "x".repeat(9 * 1024 * 1024);
    const res = await hostCall(host, "POST", "/v1/ingest", big);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: "too_large" });
    expect(await env.CHAINS.get(env.CHAINS.idFromName(run.chain)).summary()).toBeNull();
  });

  it("a suspended host's batch changes nothing", async () => {
    const h = await enrollHost(token);
    const run = new TestRun(h);
    run.start();
    await op(token, `/v1/hosts/${h.id}/suspend`, { method: "POST" });
    expect((await ingest(h, [run.part()])).status).toBe(403);
    expect(await env.CHAINS.get(env.CHAINS.idFromName(run.chain)).summary()).toBeNull();
    expect((await op(token, `/v1/runs/${run.chain}`)).status).toBe(404);
  });
});
