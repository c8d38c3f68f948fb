import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { archiveKey, archiveRuns, type ArchivedRun, sweepArchive } from "../../workers/archive.ts";
import { enrollHost, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

const DAY = 24 * 60 * 60_000;
let token: string;
let host: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
});

const rowOf = (id: string) =>
  env.DB.prepare("SELECT archive_after_ms, last_received_ms, status FROM runs WHERE id = ?")
    .bind(id)
    .first<{ archive_after_ms: number | null; last_received_ms: number; status: string }>();

async function gone(id: string) {
  while (await rowOf(id)) await scheduler.wait(20);
}

describe("ended runs' fleet rows go to the R2 archive after the workspace's rows_kept_days", () => {
  it("moves a due ended run's row and spend to R2, keeps live runs, and still answers the archived run by its id", async () => {
    const ended = new TestRun(host);
    ended.start();
    ended.llm();
    ended.stop();
    const live = new TestRun(host);
    live.start();
    await ingest(host, [ended.part(), live.part()]);
    const row = (await rowOf(ended.chain))!;
    expect(row.status).toBe("ended");
    expect(row.archive_after_ms).toBe(row.last_received_ms + 90 * DAY);
    expect((await rowOf(live.chain))!.archive_after_ms).toBeNull();
    const before = (await (await op(token, `/v1/runs/${ended.chain}`)).json()) as Record<string, unknown>;

    // Not yet due: nothing is sent.
    expect(await sweepArchive(env, row.archive_after_ms! - 1)).toBe(0);
    expect(await sweepArchive(env, row.archive_after_ms!)).toBeGreaterThanOrEqual(1);
    await gone(ended.chain);
    const spendLeft = await env.DB.prepare("SELECT count(*) AS n FROM spend WHERE run_id = ?").bind(ended.chain).first<{ n: number }>();
    expect(spendLeft!.n).toBe(0);
    const archived = (await (await env.BODIES.get(archiveKey(host.workspaceId, ended.chain)))!.json()) as ArchivedRun;
    expect(archived.run).toMatchObject({ id: ended.chain, status: "ended", hostname: expect.any(String) });
    expect(archived.spend.length).toBeGreaterThan(0);

    // The list holds what D1 holds; the archived run is still there by its id, and its record exports.
    const list = (await (await op(token, `/v1/runs?host=${host.id}`)).json()) as { runs: { id: string }[] };
    expect(list.runs.map((r) => r.id)).toEqual([live.chain]);
    const after = await op(token, `/v1/runs/${ended.chain}`);
    expect(after.status).toBe(200);
    const view = (await after.json()) as Record<string, unknown>;
    expect(view.frame_count).toBe(before.frame_count);
    expect(view.spend_microusd).toBe(before.spend_microusd);
    expect((await op(token, `/v1/runs/${ended.chain}/export`)).status).toBe(200);
    // Another workspace finds nothing.
    const { token: other } = await seedWorkspace();
    expect((await op(other, `/v1/runs/${ended.chain}`)).status).toBe(404);
  });

  it("leaves a run that came back to life since it was sent (its due time moved), and archives again idempotently", async () => {
    const run = new TestRun(host);
    run.start();
    run.stop();
    await ingest(host, [run.part()]);
    const row = (await rowOf(run.chain))!;
    // Sent by a sweep before it was due (as if the run's newer state had moved its due time): it stays.
    const m = { kind: "archive" as const, workspaceId: host.workspaceId, runs: [run.chain], dueMs: row.archive_after_ms! };
    expect(await archiveRuns(env, { ...m, dueMs: row.archive_after_ms! - 1 })).toBe(0);
    expect(await rowOf(run.chain)).not.toBeNull();
    expect(await archiveRuns(env, { ...m, workspaceId: "ws_someone_else" })).toBe(0);
    expect(await archiveRuns(env, m)).toBe(1);
    expect(await archiveRuns(env, m)).toBe(0);
    expect(await rowOf(run.chain)).toBeNull();
    expect(await env.BODIES.head(archiveKey(host.workspaceId, run.chain))).not.toBeNull();
  });

  it("follows the workspace's rows_kept_days (PATCH /v1/workspaces/:id)", async () => {
    const res = await op(token, `/v1/workspaces/${host.workspaceId}`, { method: "PATCH", json: { rows_kept_days: 7 } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ rows_kept_days: 7 });
    const run = new TestRun(host);
    run.start();
    run.stop();
    await ingest(host, [run.part()]);
    const row = (await rowOf(run.chain))!;
    expect(row.archive_after_ms).toBe(row.last_received_ms + 7 * DAY);
    expect((await op(token, `/v1/workspaces/${host.workspaceId}`, { method: "PATCH", json: { rows_kept_days: 0 } })).status).toBe(400);
  });
});
