import { env } from "cloudflare:workers";
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { hostChainId } from "../../protocol/index.ts";
import type { ChainObject } from "../../workers/chain-object.ts";
import { enrollHost, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
});

const stub = (chain: string) => env.CHAINS.get(env.CHAINS.idFromName(chain));

describe("POST /v1/ingest", () => {
  it("stores frames in order and acknowledges them", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    run.lock();
    const res = await ingest(host, [run.part(run.frames, run.locks)]);
    expect(res.status).toBe(200);
    expect(res.body.chains[0]).toMatchObject({
      chain: run.chain,
      status: "accepted",
      stored: 2,
      duplicates: [],
      missing: [],
      held: 0,
      conflicts: [],
      locks_stored: 1,
      locks_refused: [],
    });
    const view = (await (await op(token, `/v1/runs/${run.chain}`)).json()) as Record<string, unknown>;
    expect(view).toMatchObject({ status: "live", frame_count: 2, lock_count: 1 });
  });

  it("holds early frames until the hole fills, and reports what is missing", async () => {
    const run = new TestRun(host);
    for (let i = 0; i < 6; i++) run.tool();
    const [f0, f1, f2, f3, f4, f5] = run.frames;
    const first = await ingest(host, [run.part([f0!, f3!, f5!])]);
    expect(first.body.chains[0]).toMatchObject({
      stored: 1,
      held: 2,
      missing: [
        [1, 2],
        [4, 4],
      ],
    });
    const second = await ingest(host, [run.part([f2!, f1!, f4!])]);
    expect(second.body.chains[0]).toMatchObject({ stored: 6, held: 0, missing: [] });
    const page = (await (await op(token, `/v1/runs/${run.chain}/frames?from=0&limit=10`)).json()) as { frames: { seq: number }[] };
    expect(page.frames.map((f) => f.seq)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("treats a resent batch as duplicates and stores nothing new", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    run.lock();
    await ingest(host, [run.part(run.frames, run.locks)]);
    const again = await ingest(host, [run.part(run.frames, run.locks)]);
    expect(again.body.chains[0]).toMatchObject({ stored: 2, duplicates: [0, 1], conflicts: [], locks_stored: 0, locks_refused: [] });
    const v1 = await stub(run.chain).summary();
    const v2 = await stub(run.chain).summary();
    expect(v1?.version).toBe(v2?.version);
  });

  it("never forks a run under two concurrent batches", async () => {
    const run = new TestRun(host);
    for (let i = 0; i < 40; i++) run.tool();
    const a = run.frames.filter((f) => f.seq % 2 === 0);
    const b = run.frames.filter((f) => f.seq % 2 === 1);
    await Promise.all([ingest(host, [run.part(a)]), ingest(host, [run.part(b)]), ingest(host, [run.part(run.frames.slice(0, 20))])]);
    const summary = await stub(run.chain).summary();
    expect(summary?.frameCount).toBe(40);
    expect(await (await op(token, `/v1/runs/${run.chain}`)).json()).toMatchObject({ frame_count: 40 });
    await runInDurableObject(stub(run.chain), (_i: ChainObject, state) => {
      const rows = state.storage.sql.exec<{ seq: number }>("SELECT seq FROM frames ORDER BY seq").toArray();
      expect(rows.map((r) => r.seq)).toEqual([...Array(40).keys()]);
    });
  });

  it("records a different frame at a stored seq as equivocation and never appends it", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    await ingest(host, [run.part()]);
    const forged = { ...run.frames[1]!, t: run.frames[1]!.t + 5 };
    const res = await ingest(host, [run.part([forged])]);
    expect(res.body.chains[0]).toMatchObject({ stored: 2, conflicts: [1] });
    const view = (await (await op(token, `/v1/runs/${run.chain}`)).json()) as {
      gaps: { kind: string; source: string; seq?: number }[];
      grade: { value: string };
    };
    expect(view.gaps).toContainEqual(expect.objectContaining({ kind: "equivocation", source: "server", seq: 1 }));
    expect(view.grade.value).toBe("inspect");
    const page = (await (await op(token, `/v1/runs/${run.chain}/frames`)).json()) as { frames: { t: number }[] };
    expect(page.frames[1]!.t).toBe(run.frames[1]!.t);
  });

  it("records a different lock at a stored lock_seq as equivocation", async () => {
    const run = new TestRun(host);
    run.start();
    const lock0 = run.lock();
    await ingest(host, [run.part(run.frames, [lock0])]);
    const other = new TestRun(host, run.session);
    other.start();
    other.tool();
    const forged = other.lock();
    const res = await ingest(host, [run.part([], [forged])]);
    expect(res.body.chains[0]!.locks_refused).toEqual([{ lock_seq: 0, reason: expect.stringContaining("already stored") }]);
    const detail = await stub(run.chain).detail();
    expect(detail?.gaps.some((g) => g.kind === "equivocation")).toBe(true);
  });

  it("records a lock whose head does not match the stored chain as a broken chain", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    await ingest(host, [run.part()]);
    const other = new TestRun(host, run.session);
    other.add("agent_start", { path: "hook", harness: "claude-code", session_id: "different" });
    other.tool();
    const bad = other.lock();
    const res = await ingest(host, [run.part([], [bad])]);
    expect(res.body.chains[0]!.locks_refused).toEqual([{ lock_seq: 0, reason: expect.stringContaining("head") }]);
    expect((await stub(run.chain).detail())?.gaps.some((g) => g.kind === "broken_chain")).toBe(true);
  });

  it("refuses a lock ahead of the stored frames without a gap, and takes it once they arrive", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    const lock = run.lock();
    const early = await ingest(host, [run.part([run.frames[0]!], [lock])]);
    expect(early.body.chains[0]).toMatchObject({
      locks_stored: 0,
      locks_refused: [{ lock_seq: 0, reason: expect.stringContaining("resend") }],
    });
    const later = await ingest(host, [run.part([run.frames[1]!], [lock])]);
    expect(later.body.chains[0]).toMatchObject({ locks_stored: 1, locks_refused: [] });
    expect((await stub(run.chain).detail())?.gaps.filter((g) => g.source === "server")).toEqual([]);
  });

  it("survives eviction mid-run and goes on from the stored head", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    await ingest(host, [run.part()]);
    await evictDurableObject(stub(run.chain));
    run.tool();
    run.lock();
    const res = await ingest(host, [run.part(run.frames, run.locks)]);
    expect(res.body.chains[0]).toMatchObject({ stored: 3, duplicates: [0, 1], locks_stored: 1 });
    await evictDurableObject(stub(run.chain));
    expect((await stub(run.chain).summary())?.frameCount).toBe(3);
  });

  it("keeps held frames across an eviction and appends them when the hole fills", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    run.tool();
    await ingest(host, [run.part([run.frames[0]!, run.frames[2]!])]);
    await evictDurableObject(stub(run.chain));
    const res = await ingest(host, [run.part([run.frames[1]!])]);
    expect(res.body.chains[0]).toMatchObject({ stored: 3, held: 0, missing: [] });
  });

  it("ends a run on agent_stop with its outcome, and crashed on a crashed stop", async () => {
    const ok = new TestRun(host);
    ok.start();
    ok.llm({ claim: 2500 });
    ok.stop();
    ok.lock(true);
    await ingest(host, [ok.part(ok.frames, ok.locks)]);
    const view = (await (await op(token, `/v1/runs/${ok.chain}`)).json()) as Record<string, unknown>;
    expect(view).toMatchObject({
      status: "ended",
      outcome: { value: "completed" },
      recorded_outcome: "completed",
      spend_microusd: 4500,
      model_calls: 1,
      model_calls_failed: 0,
      tier: { value: "gateway" },
    });
    const bad = new TestRun(host);
    bad.start();
    bad.stop("crashed");
    await ingest(host, [bad.part()]);
    expect(await (await op(token, `/v1/runs/${bad.chain}`)).json()).toMatchObject({
      status: "crashed",
      outcome: { value: "crashed" },
      recorded_outcome: "crashed",
    });
  });

  it("accepts the host's own chain and refuses another host's chain or run", async () => {
    const own = await ingest(host, [{ chain: hostChainId(host.id), frames: [], locks: [] }]);
    expect(own.status).toBe(200);
    const theirs = await ingest(host, [{ chain: hostChainId("someone-else"), frames: [], locks: [] }]);
    expect(theirs.status).toBe(400);
    const run = new TestRun(host);
    run.start();
    const wrongMeta = await ingest(host, [{ ...run.part(), run: { ...run.meta, session_id: "another" } }]);
    expect(wrongMeta.status).toBe(400);
    expect(await stub(run.chain).summary()).toBeNull();
  });

  it("refuses a whole batch when one frame is invalid, storing nothing", async () => {
    const good = new TestRun(host);
    good.start();
    const bad = new TestRun(host);
    bad.start();
    const broken = { ...bad.frames[0]!, payload: '{"path":"hook"}' };
    const res = await ingest(host, [good.part(), bad.part([broken])]);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_batch");
    expect(await stub(good.chain).summary()).toBeNull();
  });
});
