import { beforeAll, describe, expect, it } from "vitest";
import { enrollHost, ingest, op, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let token: string;
let host: TestHost;

beforeAll(async () => {
  ({ token } = await seedWorkspace());
  host = await enrollHost(token);
});

const tierOf = async (chain: string) =>
  ((await (await op(token, `/v1/runs/${chain}`)).json()) as { tier: { value: string; reason: string } }).tier;

describe("the gateway tier", () => {
  it("comes only from a model call the gateway carried under a lock of the computer, never from an unlocked frame", async () => {
    const run = new TestRun(host);
    run.start();
    run.add("policy_decision", { path: "hook", subject: "tool", decision: "allow", mode: "enforce", rule: "r1" });
    run.lock();
    await ingest(host, [run.part(run.frames, run.locks)]);
    expect((await tierOf(run.chain)).value).toBe("harness");
    run.llm({ claim: 100 });
    await ingest(host, [run.part(run.frames.slice(2))]);
    const unlocked = await tierOf(run.chain);
    expect(unlocked.value).toBe("harness");
    run.lock();
    await ingest(host, [run.part([], run.locks.slice(1))]);
    expect(await tierOf(run.chain)).toEqual({ value: "gateway", reason: "the gateway carried 1 of the run's model calls" });
  });

  it("a transcript's model call, however many, does not reach it", async () => {
    const run = new TestRun(host);
    run.start();
    run.add("llm_call", {
      path: "transcript",
      vendor: "anthropic",
      model: "claude",
      forwarded: true,
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    run.lock();
    await ingest(host, [run.part(run.frames, run.locks)]);
    expect((await tierOf(run.chain)).value).toBe("observe");
  });
});
