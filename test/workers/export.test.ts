import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { BUNDLE_V2_PAYLOAD_TYPE, bodyRef, publicKeyOf, verifyBundle } from "../../protocol/index.ts";
import { PAGE_CHARS } from "../../workers/chain/export.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";
import { enrollHost, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

const SERVER_PUBLIC = publicKeyOf(SERVER_SECRET);
let token: string;
let host: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
});

const stub = (chain: string) => env.CHAINS.get(env.CHAINS.idFromName(chain));

/** A tool request naming 16 kept bodies that are never uploaded: about 2 KB a frame. */
function heavyTool(run: TestRun, i: number) {
  const bodies = Array.from({ length: 16 }, (_, k) => bodyRef("tool_input", `input ${i}.${k}`, true));
  return run.add("tool_requested", { path: "hook", tool_name: "Bash", input: { sha256: bodies[0]!.sha256, size: 1 }, bodies });
}

describe("export, streamed a page at a time", () => {
  it("streams a run of several pages, with a missing_bodies gap over several lines, and the bundle verifies", async () => {
    const run = new TestRun(host);
    run.start();
    for (let i = 0; i < 1500; i++) heavyTool(run, i);
    run.stop();
    run.lock(true);
    expect((await ingest(host, [run.part(run.frames, run.locks)])).status).toBe(200);

    const res = await op(token, `/v1/runs/${run.chain}/export`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(BUNDLE_V2_PAYLOAD_TYPE);
    const bundle = await res.text();
    const lines = bundle.trimEnd().split("\n");
    expect(bundle.length).toBeGreaterThan(2 * PAGE_CHARS);
    expect(lines.filter((l) => l.startsWith('{"seq":'))).toHaveLength(1502);
    // 24,000 distinct bodies never arrived: one gap, its bodies read in two pages (16,384, then the
    // rest) and written at most 1,000 a line: 17 lines, then 8.
    expect(lines.filter((l) => l.startsWith('{"gap":{"kind":"missing_bodies","source":"server"'))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith('{"gap_bodies":'))).toHaveLength(24);
    const listed = lines
      .filter((l) => l.startsWith('{"gap'))
      .flatMap((l) => {
        const v = JSON.parse(l);
        return (v.gap?.bodies ?? v.gap_bodies) as string[];
      });
    expect(new Set(listed).size).toBe(24_000);
    expect([...listed].sort()).toEqual(listed);

    const result = verifyBundle(bundle, { serverKey: SERVER_PUBLIC });
    expect(result.findings.map((f) => f.code)).toEqual(["GAPS"]);
    expect(result.exit).toBe(3);
    expect(result.summary).toMatchObject({ frames: 1502, locks: 1, finalLocked: true, gaps: 1, grade: "inspect" });
  }, 120_000);

  it("keeps every RPC page near PAGE_CHARS, however large the frames", async () => {
    const run = new TestRun(host);
    run.start();
    const changed = Array.from({ length: 250 }, (_, i) => ({ file: `${"d/".repeat(90)}f${i}.txt`, status: "modified" as const }));
    for (let i = 0; i < 40; i++) run.add("oxagen:worktree_reconciled", { path: "worktree", root: "/r", changed, commits: [] });
    expect(run.frames[1]!.payload.length).toBeGreaterThan(50_000);
    expect((await ingest(host, [run.part()])).status).toBe(200);
    const pages: number[] = [];
    for (let from: number | null = 0; from !== null; ) {
      const page = await stub(run.chain).exportPage({ section: "frames", from, to: run.frames.length });
      pages.push(page.lines.length);
      expect(page.tally?.frames).toBe(page.lines.split("\n").length - 1);
      from = page.next as number | null;
    }
    expect(pages.length).toBeGreaterThan(1);
    for (const chars of pages) expect(chars).toBeLessThan(PAGE_CHARS + 70_000);
  });

  it("exports the run as it was when the export started, though frames and locks arrive meanwhile", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    run.lock();
    run.stop("crashed");
    await ingest(host, [run.part(run.frames, run.locks)]);
    const head = (await stub(run.chain).exportHead())!;
    expect(head).toMatchObject({ frames: 3, locks: 1, missingBodies: true });
    const before = run.frames.length;
    run.tool();
    run.lock();
    await ingest(host, [run.part(run.frames.slice(before), run.locks.slice(1))]);
    const frames = await stub(run.chain).exportPage({ section: "frames", from: 0, to: head.frames });
    const locks = await stub(run.chain).exportPage({ section: "locks", from: 0, to: head.locks });
    expect(frames.lines.split("\n").filter(Boolean)).toHaveLength(3);
    expect(locks.lines.split("\n").filter(Boolean)).toHaveLength(1);
    expect(frames.next).toBeNull();
  });

  it("answers 404 for a run the chain object does not hold", async () => {
    expect(await stub("run_00000000000000000000000000000001").exportHead()).toBeNull();
  });
});
