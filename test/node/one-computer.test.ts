// One computer, one enrollment: two enrollments (two HOMEs) get ports of their own; a recorder that
// cannot listen on its hook port says so (enroll, status, its log) and a Claude Code session it
// records gets a gap for the steps posted there; a second token re-enrolls the same computer.
// tacho status shows the operator's stops that apply here; tacho daemon stop says how to keep it stopped.
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runIdFor } from "../../protocol/index.ts";
import { type DaemonProc, HOST, makeHome, readJournal, sendLine, startDaemon, until } from "../support/recorder.ts";
import { startStub, STUB_TOKEN, type StubServer } from "./support/stub-server.ts";
import { run, TACHO, tempHome } from "./support/tacho.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

let stub: StubServer;
const homes: ReturnType<typeof tempHome>[] = [];
const daemons: DaemonProc[] = [];
const held: Server[] = [];
beforeAll(async () => {
  stub = await startStub();
});
afterAll(() => stub.close());
afterEach(async () => {
  for (const h of homes.splice(0)) {
    await run(TACHO, ["daemon", "stop"], { env: h.env });
    h.cleanup();
  }
  for (const d of daemons.splice(0)) {
    d.proc.kill("SIGKILL");
    await d.exited;
  }
  for (const s of held.splice(0)) await new Promise((r) => s.close(r));
});

function newHome() {
  const h = tempHome();
  homes.push(h);
  return h;
}
async function holdPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  held.push(s);
  return (s.address() as { port: number }).port;
}
const hostOf = (h: ReturnType<typeof tempHome>) => JSON.parse(readFileSync(join(h.env.OXAGEN_HOME!, "host.json"), "utf8")) as Json;

describe("one computer, one enrollment", () => {
  it("two enrollments on one computer get ports of their own, each kept in host.json", async () => {
    const a = newHome();
    const b = newHome();
    const ra = await run(TACHO, ["enroll", "--server", stub.url, "--token", STUB_TOKEN], { env: a.env });
    expect(ra.code, ra.stderr).toBe(0);
    const rb = await run(TACHO, ["enroll", "--server", stub.url, "--token", STUB_TOKEN], { env: b.env });
    expect(rb.code, rb.stderr).toBe(0);
    const [pa, pb] = [hostOf(a).ports, hostOf(b).ports];
    expect(new Set([pa.hooks, pa.gateway, pb.hooks, pb.gateway]).size).toBe(4);
    const stop = await run(TACHO, ["daemon", "stop"], { env: a.env });
    expect(stop.stdout).toContain("The next hook of a wrapped harness or custom agent starts it again");
    expect(stop.stdout).toContain("To keep it stopped, stop wrapping: tacho reassign --harness none");
  });

  it("enroll on a hook port another program holds says so and exits 1", async () => {
    const h = newHome();
    const taken = await holdPort();
    const r = await run(TACHO, ["enroll", "--server", stub.url, "--token", STUB_TOKEN, "--hooks-port", String(taken)], { env: h.env });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`but the recorder cannot listen on its hook port 127.0.0.1:${taken} (another program`);
    expect(r.stdout).toContain("tacho enroll --hooks-port N");
  });

  it("a recorder that cannot listen on its hook port: its log and tacho status say so, and a Claude Code session's record has a gap", async () => {
    const taken = await holdPort();
    const home = await makeHome({ port: taken });
    const d = await startDaemon(home);
    daemons.push(d);
    await until(() => d.stderr().includes(`HTTP hooks unavailable: cannot listen on 127.0.0.1:${taken}`));
    const env = { OXAGEN_HOME: home.dir, HOME: home.dir, CLAUDE_CONFIG_DIR: join(home.dir, "claude") };
    const status = await run(TACHO, ["status", "--offline"], { env });
    expect(status.stdout).toContain(`CANNOT LISTEN on its hook port 127.0.0.1:${taken}: another program`);
    const session = "s-port-1";
    const event = { session_id: session, hook_event_name: "SessionStart", cwd: home.dir };
    await sendLine(home, { v: 1, id: "e-1", t: Date.now(), source: "command", harness: "claude-code", agent: null, event });
    await sendLine(home, {
      v: 1,
      id: "e-2",
      t: Date.now(),
      source: "command",
      harness: "claude-code",
      agent: null,
      event: { ...event, hook_event_name: "UserPromptSubmit", prompt: "hi" },
    });
    const frames = await until(() => readJournal(home).get(runIdFor(HOST, "claude-code", session))?.frames);
    const gaps = frames.filter((f) => f.kind === "telemetry_gap");
    expect(gaps).toHaveLength(1);
    expect(JSON.stringify(gaps[0])).toContain(`could not listen on its HTTP hook port 127.0.0.1:${taken}`);
  });

  it("a second token re-enrolls the same computer: it says so, keeps the harness settings, and refuses while the recorder runs", async () => {
    const h = newHome();
    expect(
      (await run(TACHO, ["enroll", "--server", stub.url, "--token", STUB_TOKEN, "--harness", "claude-code"], { env: h.env })).code,
    ).toBe(0);
    const first = hostOf(h);
    const settings = readFileSync(join(h.env.CLAUDE_CONFIG_DIR!, "settings.json"), "utf8");
    const running = await run(TACHO, ["enroll", "--server", stub.url, "--token", STUB_TOKEN], { env: h.env });
    expect(running.code).toBe(1);
    expect(running.stderr).toContain("stop it with tacho daemon stop, then run this tacho enroll again");
    expect((await run(TACHO, ["daemon", "stop"], { env: h.env })).code).toBe(0);
    const again = await run(TACHO, ["enroll", "--no-start", "--server", stub.url, "--token", STUB_TOKEN], { env: h.env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(
      `this computer was enrolled already (host ${first.host_id} in workspace ${first.workspace}): re-enrolled it`,
    );
    const next = hostOf(h);
    expect(next.host_id).not.toBe(first.host_id);
    expect(next.ports).toEqual(first.ports);
    expect(next.hook_secret).toBe(first.hook_secret);
    expect(next.harnesses).toEqual(["claude-code"]);
    expect(readFileSync(join(h.env.CLAUDE_CONFIG_DIR!, "settings.json"), "utf8")).toBe(settings);
    expect(existsSync(join(h.env.OXAGEN_HOME!, "journal"))).toBe(false);
  });
});

describe("tacho status shows the operator's stops that apply here", () => {
  it("a suspended computer, a paused run and agent, an exhausted budget; none when there is none", async () => {
    const run1 = runIdFor(HOST, "claude-code", "s-1");
    const home = await makeHome({
      policy: {
        suspended_hosts: [HOST],
        paused_runs: [run1],
        paused_agents: ["claude-code"],
        exhausted_budgets: [
          {
            budget: "daily",
            scope: "workspace",
            window: "day",
            until_ms: Date.now() + 3_600_000,
            spent_microusd: 5_000_000,
            limit_microusd: 5_000_000,
          },
        ],
      },
    });
    const env = { OXAGEN_HOME: home.dir, HOME: home.dir, CLAUDE_CONFIG_DIR: join(home.dir, "claude") };
    const r = await run(TACHO, ["status", "--offline"], { env });
    expect(r.stdout).toContain("stopped: this computer is suspended by an operator; every step here is refused");
    expect(r.stdout).toContain(`stopped: run ${run1} is paused by an operator`);
    expect(r.stdout).toContain("stopped: the agent claude-code is paused by an operator (wrapped here)");
    expect(r.stdout).toMatch(/stopped: budget exhausted: daily allows \$5\.00 for the workspace in today \(UTC\)/);
    const json = JSON.parse((await run(TACHO, ["status", "--offline", "--json"], { env })).stdout) as Json;
    expect(json.stops).toMatchObject({ known: true, suspended: true, paused_runs: [run1] });
    const quiet = await makeHome({ policy: {} });
    const q = await run(TACHO, ["status", "--offline"], { env: { ...env, OXAGEN_HOME: quiet.dir } });
    expect(q.stdout).toContain("stops: none (no pause, suspension or exhausted budget applies here)");
  });
});
