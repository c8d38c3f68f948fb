import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runIdFor, verifyChain } from "../../protocol/index.ts";
import { collect } from "./support/tacho.ts";
import {
  agentEvent,
  eventId,
  HOST,
  makeHome,
  NODE,
  payloads,
  readJournal,
  sleep,
  socketHealth,
  startDaemon,
  TACHO,
  until,
  Recorders,
} from "../support/recorder.ts";

const recorders = new Recorders();
const running = recorders.running;
afterEach(() => recorders.stop());

describe("recorder durability", () => {
  it("kill -9 in the middle of a stream of events: after a restart nothing answered is lost and nothing is recorded twice", async () => {
    const home = await makeHome({ policy: {} });
    const N = 120;
    const events = Array.from({ length: N }, (_, i) => ({
      id: eventId(),
      event:
        i === 0
          ? { session_id: "crash-1", hook_event_name: "SessionStart" }
          : {
              session_id: "crash-1",
              hook_event_name: "PreToolUse",
              tool_name: "run_shell",
              tool_input: { command: `echo ${i}` },
              tool_use_id: `call-${i}`,
            },
    }));
    const answered = new Set<string>();
    let d = await startDaemon(home);
    running.push(d);
    // Several senders at once, so the kill lands while requests are in flight.
    let next = 0;
    const sender = async () => {
      while (next < N) {
        const e = events[next++]!;
        try {
          await agentEvent(home, "crash-agent", e.event, e.id);
          answered.add(e.id);
        } catch {
          return;
        }
      }
    };
    const senders = Promise.all([sender(), sender(), sender()]);
    while (answered.size < N / 3) await sleep(1);
    d.proc.kill("SIGKILL");
    await d.exited;
    await senders;
    expect(answered.size).toBeLessThan(N);

    d = await startDaemon(home);
    running.push(d);
    // The hook client retries everything it is not sure of, including ones that were answered.
    for (const e of events) await agentEvent(home, "crash-agent", e.event, e.id);

    const chain = runIdFor(HOST, "crash-agent", "crash-1");
    const view = readJournal(home).get(chain)!;
    expect(verifyChain(chain, view.frames).problems).toEqual([]);
    const ids = payloads(view).filter((p) => p.tool_use_id !== undefined);
    const requested = view.frames.filter((f) => f.kind === "tool_requested").map((f) => JSON.parse(f.payload).tool_use_id as string);
    expect(new Set(requested).size).toBe(requested.length);
    expect(requested.length).toBe(N - 1);
    expect(ids.length).toBe(2 * (N - 1));
    expect(view.frames.filter((f) => f.kind === "telemetry_gap").map((f) => JSON.parse(f.payload).cause)).toEqual(["daemon_down"]);
  });

  it("replays the spool in order, exactly once, with a daemon_down gap in each running session and a spool_overflow gap", async () => {
    const home = await makeHome();
    let d = await startDaemon(home);
    running.push(d);
    await agentEvent(home, "spool-agent", { session_id: "run-a", hook_event_name: "SessionStart" });
    d.proc.kill("SIGTERM");
    await d.exited;

    const t = Date.now();
    const line = (id: string, event: Record<string, unknown>, agent = "spool-agent") =>
      JSON.stringify({
        v: 1,
        id,
        t,
        source: "command",
        harness: null,
        agent,
        event,
        spooled_ms: t,
        answer:
          event.hook_event_name === "PreToolUse"
            ? { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow" }, enforcement_tier: "client_attested" }
            : {},
      });
    mkdirSync(join(home.dir, "spool"), { recursive: true });
    const spooled = [
      line("00000000000000a1", { session_id: "run-a", hook_event_name: "UserPromptSubmit", prompt: "go" }),
      line("00000000000000a2", {
        session_id: "run-a",
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: "make" },
        tool_use_id: "t1",
      }),
      line("00000000000000b1", { session_id: "run-b", hook_event_name: "SessionStart" }),
      line("00000000000000a2", {
        session_id: "run-a",
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: "make" },
        tool_use_id: "t1",
      }),
      '{"torn',
    ];
    writeFileSync(join(home.dir, "spool/events.jsonl"), `${spooled.join("\n")}\n`);
    writeFileSync(join(home.dir, "spool/dropped"), "7\n");

    d = await startDaemon(home);
    running.push(d);
    const journal = readJournal(home);
    const a = journal.get(runIdFor(HOST, "spool-agent", "run-a"))!;
    const b = journal.get(runIdFor(HOST, "spool-agent", "run-b"))!;
    expect(a.frames.map((f) => f.kind)).toEqual([
      "agent_start",
      "telemetry_gap",
      "turn_start",
      "policy_decision",
      "tool_requested",
      "telemetry_gap",
    ]);
    expect(payloads(a)[1]).toMatchObject({ cause: "daemon_down", path: "recorder" });
    expect(payloads(a)[3]).toMatchObject({ decision: "allow", offline: true });
    expect(payloads(a)[5]).toMatchObject({ cause: "spool_overflow", dropped: 7 });
    expect(b.frames.map((f) => f.kind)).toEqual(["agent_start", "telemetry_gap", "telemetry_gap"]);
    for (const [chain, v] of journal) expect(verifyChain(chain, v.frames).problems).toEqual([]);
    expect(existsSync(join(home.dir, "spool/events.jsonl"))).toBe(false);
    expect(existsSync(join(home.dir, "spool/dropped"))).toBe(false);

    // A second restart replays nothing again.
    d.proc.kill("SIGKILL");
    await d.exited;
    d = await startDaemon(home);
    running.push(d);
    const again = readJournal(home).get(runIdFor(HOST, "spool-agent", "run-a"))!;
    expect(again.frames.filter((f) => f.kind === "tool_requested").length).toBe(1);
  });
});

describe("the fault run of issue 10: kill -9 of the recorder while real hooks run", () => {
  it("every step a hook answered is recorded once, spooled or not, and the hooks restart the recorder themselves", async () => {
    const home = await makeHome({ policy: {}, autostart: true });
    recorders.autostarted.push(home.dir);
    const first = await startDaemon(home);
    running.push(first);
    const SESSIONS = 3;
    const STEPS = 15;
    const env = { PATH: process.env.PATH ?? "", OXAGEN_HOME: home.dir };
    const hook = (payload: Record<string, unknown>) =>
      collect(NODE, [TACHO, "hook", "--agent", "fault-agent"], env, JSON.stringify(payload));
    let done = 0;
    const session = async (s: number) => {
      await hook({ session_id: `f-${s}`, hook_event_name: "SessionStart" });
      for (let i = 0; i < STEPS; i++) {
        const r = await hook({
          session_id: `f-${s}`,
          hook_event_name: "PreToolUse",
          tool_name: "run_shell",
          tool_input: { command: `echo ${i}` },
          tool_use_id: `s${s}-c${i}`,
        });
        expect(r.code).toBe(0);
        expect(r.stdout.trim().split("\n")).toHaveLength(1);
        done++;
      }
    };
    const all = Promise.all(Array.from({ length: SESSIONS }, (_, s) => session(s)));
    while (done < (SESSIONS * STEPS) / 3) await sleep(5);
    first.proc.kill("SIGKILL");
    await first.exited;
    await all;
    // A hook that found it down started a new recorder, which replays what was spooled.
    await until(() => socketHealth(home).catch(() => null));
    await until(() => !existsSync(join(home.dir, "spool/events.jsonl")) && !existsSync(join(home.dir, "spool/replaying.jsonl")));
    const journal = readJournal(home);
    for (let s = 0; s < SESSIONS; s++) {
      const chain = runIdFor(HOST, "fault-agent", `f-${s}`);
      const view = journal.get(chain)!;
      expect(verifyChain(chain, view.frames).problems).toEqual([]);
      const requested = payloads(view)
        .filter((_, i) => view.frames[i]!.kind === "tool_requested")
        .map((p) => p.tool_use_id);
      expect(requested.sort()).toEqual(Array.from({ length: STEPS }, (_, i) => `s${s}-c${i}`).sort());
    }
  }, 240_000);
});
