import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { publicKeyOf, verifyBundle } from "../../protocol/index.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";
import { enrollHost, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;
const SERVER_PUBLIC = publicKeyOf(SERVER_SECRET);

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
});

const stub = (chain: string) => env.CHAINS.get(env.CHAINS.idFromName(chain));
type RunView = { status: string; gaps: { kind: string; seq?: number; from_seq?: number; to_seq?: number; count?: number }[] };
const view = async (chain: string) => (await (await op(token, `/v1/runs/${chain}`)).json()) as RunView;

describe("a final lock covers every frame the server received", () => {
  it("refuses a final lock whose count is below the stored frames, and keeps it as evidence", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    run.stop();
    // A second writer of the same session: its final lock covers the first frame only.
    const short = new TestRun(host, run.session);
    short.start();
    const final = short.lock(true);
    await ingest(host, [run.part()]);
    const res = await ingest(host, [run.part([], [final])]);
    expect(res.body.chains[0]).toMatchObject({
      locks_stored: 0,
      locks_refused: [{ lock_seq: 0, reason: expect.stringContaining("must cover every frame") }],
    });
    const v = await view(run.chain);
    expect(v.status).toBe("ended");
    expect(v.gaps).toContainEqual(expect.objectContaining({ kind: "broken_chain", source: "server", seq: 0, count: 1 }));
    const exported = await (await op(token, `/v1/runs/${run.chain}/export`)).text();
    const result = verifyBundle(exported, { serverKey: SERVER_PUBLIC });
    expect(result.findings.map((f) => f.code)).not.toContain("FRAMES_AFTER_FINAL");
    expect(result.exit).toBe(3);
    const lines = exported
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const manifest = {
      locks: lines.filter((l) => "lock" in l),
      equivocations: lines.flatMap((l) => ("equivocation" in l ? [l.equivocation as { what: string; seq: number }] : [])),
    };
    expect(manifest.equivocations).toEqual([expect.objectContaining({ what: "lock", seq: 0 })]);
  });

  it("refuses a final lock placed before frames held beyond a hole, and a gap names the held frames", async () => {
    const run = new TestRun(host);
    run.start();
    run.tool();
    const final = new TestRun(host, run.session);
    final.start();
    final.tool();
    const finalLock = final.lock(true);
    for (let i = 0; i < 3; i++) run.tool();
    const [f0, f1, , f3, f4] = run.frames;
    const res = await ingest(host, [run.part([f0!, f1!, f3!, f4!], [finalLock])]);
    expect(res.body.chains[0]).toMatchObject({
      stored: 2,
      held: 2,
      missing: [[2, 2]],
      locks_stored: 0,
      locks_refused: [{ lock_seq: 0, reason: expect.stringContaining("seq 3 to 4") }],
    });
    expect((await stub(run.chain).summary())?.status).toBe("live");
    expect((await view(run.chain)).gaps).toContainEqual(expect.objectContaining({ kind: "broken_chain", source: "server", seq: 0 }));
  });

  it("at a seal, names both the hole and the frames held beyond it", async () => {
    const run = new TestRun(host);
    for (let i = 0; i < 5; i++) run.tool();
    const [f0, f1, , f3, f4] = run.frames;
    await ingest(host, [run.part([f0!, f1!, f3!, f4!])]);
    expect((await op(token, `/v1/runs/${run.chain}/seal`, { method: "POST" })).status).toBe(200);
    const gaps = (await view(run.chain)).gaps;
    expect(gaps).toContainEqual(expect.objectContaining({ kind: "missing_frames", from_seq: 2, to_seq: 2, count: 1 }));
    expect(gaps).toContainEqual(expect.objectContaining({ kind: "broken_chain", from_seq: 3, to_seq: 4, count: 2 }));
    const exported = await (await op(token, `/v1/runs/${run.chain}/export`)).text();
    const result = verifyBundle(exported, { serverKey: SERVER_PUBLIC });
    expect(result.findings.filter((f) => f.severity === "tamper")).toEqual([]);
    expect(result.exit).toBe(3);
  });
});
