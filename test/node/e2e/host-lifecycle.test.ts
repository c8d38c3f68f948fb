// End to end: a computer rotates its host key mid-session and later unenrolls, against the real Worker.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyIdFor, publicKeyOf, runIdFor, verifyBundle } from "../../../protocol/index.ts";
import { daemonUp, drained, enroll, eventually, newComputer, runDaemon, stopAll, stopDaemon, type Computer } from "../../support/e2e.ts";
import { SERVER_SECRET } from "../../support/sample-run.ts";
import { startWorker, type LocalWorker } from "../../support/worker.ts";

let worker: LocalWorker;
let computer: Computer;
let hostId: string;
let daemon: ReturnType<typeof runDaemon> | undefined;

const AGENT = "lifecycle-agent";
const hostJson = () => JSON.parse(readFileSync(join(computer.env.OXAGEN_HOME!, "host.json"), "utf8")) as { public_key: string };
const step = (session: string, event: string, extra: Record<string, unknown> = {}) =>
  computer.hook(["--agent", AGENT], { session_id: session, hook_event_name: event, ...extra });
const runView = async (id: string) => (await (await worker.api(`/v1/runs/${id}`)).json()) as { status: string; lock_count: number };

beforeAll(async () => {
  worker = await startWorker();
  computer = await newComputer();
  hostId = (await enroll(worker, computer)).hostId;
  daemon = runDaemon(computer);
  await daemonUp(computer);
}, 240_000);

afterAll(() => stopAll(daemon, worker));

describe("a host's key and enrollment over its life", () => {
  it("rotates its key mid-session: the open run stays on the key that began it, a new run takes the new key, both verify", async () => {
    const before = keyIdFor(Buffer.from(hostJson().public_key, "hex"));
    const old = runIdFor(hostId, AGENT, "s-old");
    step("s-old", "SessionStart");
    step("s-old", "UserPromptSubmit", { prompt: "before the rotation" });
    await eventually(async () => (await runView(old)).lock_count > 0, "the first run's first lock");
    expect(computer.tacho(["rotate-key"]).status).toBe(1);
    daemon = await stopDaemon(daemon);
    const rotated = computer.tacho(["rotate-key", "--json"]);
    expect(rotated.status, rotated.stderr).toBe(0);
    const answer = JSON.parse(rotated.stdout) as { key_id: string; retired_key_id: string; open_chains_on_old_key: number };
    expect(answer).toMatchObject({ retired_key_id: before, open_chains_on_old_key: 1 });
    daemon = runDaemon(computer);
    await daemonUp(computer);
    const fresh = runIdFor(hostId, AGENT, "s-new");
    step("s-old", "UserPromptSubmit", { prompt: "after the rotation" });
    step("s-old", "SessionEnd");
    step("s-new", "SessionStart");
    step("s-new", "SessionEnd");
    await drained(computer);
    for (const [run, key] of [
      [old, before],
      [fresh, answer.key_id],
    ] as const) {
      await eventually(async () => (await runView(run)).status === "ended", `${run} to end`);
      const bundle = await (await worker.api(`/v1/runs/${run}/export`)).text();
      const result = verifyBundle(bundle, { serverKey: publicKeyOf(SERVER_SECRET) });
      expect(result.findings.filter((f) => f.severity === "tamper")).toEqual([]);
      expect(result.summary.finalLocked).toBe(true);
      expect(bundle).toContain(`"host_key":{"pub":`);
      expect(bundle).toContain(`"key_id":"${key}"}`);
    }
  });

  it("unenrolls: refused while the recorder runs, then the server stops taking the key and the enrollment is gone", async () => {
    expect(computer.tacho(["unenroll"]).status).toBe(1);
    daemon = await stopDaemon(daemon);
    const out = computer.tacho(["unenroll", "--json"]);
    expect(out.status, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ host_id: hostId, server: "unenrolled", dropped: 0 });
    expect(existsSync(join(computer.env.OXAGEN_HOME!, "host.json"))).toBe(false);
    expect(await (await worker.api(`/v1/hosts/${hostId}`)).json()).toMatchObject({ status: "unenrolled" });
  });
});
