// End to end against the real Worker: one computer, one enrollment. A second token on an enrolled
// computer re-enrolls that same computer (issue 21 item 3): the old host is unenrolled on the
// server (GET /v1/hosts shows it), the new host records, and nothing of the user's configuration
// changes; unenroll later gives the user's own settings back byte for byte.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runIdFor } from "../../../protocol/index.ts";
import { daemonUp, drained, eventually, newComputer, runDaemon, stopAll, stopDaemon, type Computer } from "../../support/e2e.ts";
import { startWorker, type LocalWorker } from "../../support/worker.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

let worker: LocalWorker;
let computer: Computer;
let daemon: ReturnType<typeof runDaemon> | undefined;
const OWN = `{\n  "env": { "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/corp", "MY_FLAG": "1" },\n  "hooks": { "Stop": [ { "hooks": [ { "type": "command", "command": "./mine.sh" } ] } ] }\n}`;
const settingsPath = () => join(computer.env.CLAUDE_CONFIG_DIR!, "settings.json");
const hostJson = () => JSON.parse(readFileSync(join(computer.env.OXAGEN_HOME!, "host.json"), "utf8")) as Json;
const token = async () =>
  ((await (await worker.api("/v1/enrollment-tokens", { method: "POST", body: "{}" })).json()) as Json).token as string;
const enrollWith = async (t: string) =>
  computer.tacho([
    "enroll",
    "--no-start",
    "--server",
    worker.url,
    "--token",
    t,
    "--harness",
    "claude-code",
    "--gateway",
    "--hooks-port",
    String(computer.port),
    "--gateway-port",
    String(computer.gatewayPort),
    "--json",
  ]);
const hosts = async () => ((await (await worker.api("/v1/hosts")).json()) as { hosts: Json[] }).hosts;
const step = (session: string, event: string) =>
  computer.hook(["--harness", "claude-code"], { session_id: session, hook_event_name: event, cwd: computer.home, transcript_path: null });

beforeAll(async () => {
  worker = await startWorker();
  computer = await newComputer();
  mkdirSync(computer.env.CLAUDE_CONFIG_DIR!, { recursive: true });
  writeFileSync(settingsPath(), OWN);
}, 240_000);
afterAll(() => stopAll(daemon, worker));

describe("a second token on an enrolled computer", () => {
  let first: Json;
  let written = "";
  it("re-enrolls this computer: refused while the recorder runs; then the old host is unenrolled on the server, the user's settings stay as they were", async () => {
    const a = await enrollWith(await token());
    expect(a.status, a.stderr).toBe(0);
    first = JSON.parse(a.stdout) as Json;
    written = readFileSync(settingsPath(), "utf8");
    const hostBefore = hostJson();
    daemon = runDaemon(computer);
    await daemonUp(computer);
    step("s-old", "SessionStart");
    step("s-old", "SessionEnd");
    await drained(computer);

    const second = await token();
    const refused = await enrollWith(second);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`this computer is enrolled already as ${first.host_id}`);
    expect((await hosts()).filter((h) => h.status === "active")).toHaveLength(1);
    daemon = await stopDaemon(daemon);

    const b = await enrollWith(second);
    expect(b.status, b.stderr).toBe(0);
    const again = JSON.parse(b.stdout) as Json;
    expect(again.host_id).not.toBe(first.host_id);
    expect(again.reenrolled).toEqual({ old_host: first.host_id, old_workspace: first.workspace, server: "unenrolled" });
    const list = await hosts();
    expect(list.find((h) => h.id === first.host_id)).toMatchObject({ status: "unenrolled" });
    expect(list.find((h) => h.id === again.host_id)).toMatchObject({ status: "active" });
    expect(list.filter((h) => h.status === "active")).toHaveLength(1);
    // Nothing of the user's changed: the same settings bytes, secret, ports and upstream.
    expect(readFileSync(settingsPath(), "utf8")).toBe(written);
    const hostAfter = hostJson();
    for (const key of ["hook_secret", "ports", "upstreams", "harnesses", "gateway"]) expect(hostAfter[key], key).toEqual(hostBefore[key]);
    expect(hostAfter.upstreams.anthropic.url).toBe("http://127.0.0.1:9/corp");
  });

  it("the re-enrolled computer records under its new host; unenroll then gives the user's own settings back byte for byte", async () => {
    const hostId = hostJson().host_id as string;
    daemon = runDaemon(computer);
    await daemonUp(computer);
    step("s-new", "SessionStart");
    step("s-new", "SessionEnd");
    const run = runIdFor(hostId, "claude-code", "s-new");
    await eventually(
      async () => ((await (await worker.api(`/v1/runs/${run}`)).json()) as Json).status === "ended",
      "the new host's run to end on the server",
    );
    await drained(computer);
    daemon = await stopDaemon(daemon);
    const out = computer.tacho(["unenroll", "--json"]);
    expect(out.status, out.stderr).toBe(0);
    expect(readFileSync(settingsPath(), "utf8")).toBe(OWN);
    expect((await hosts()).filter((h) => h.status === "active")).toEqual([]);
  });
});
