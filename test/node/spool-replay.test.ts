// The spool is replayed for as long as the recorder runs, and nothing in it leaves unrecorded
// (docs/collector.md, "The spool"); steps of a session that already ended start a new run.
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { httpHook } from "../../collector/daemon/hooks.ts";
import { listenHttp } from "../../collector/recorder/listener.ts";
import type { HookRequest } from "../../collector/recorder/request.ts";
import { MAX_ATTEMPTS, SpoolReplayer } from "../../collector/recorder/replay.ts";
import { appendSpool } from "../../collector/recorder/spool.ts";
import { defaultPolicy, hostChainId, policyEtag, runIdFor, signPolicy, verifyChain } from "../../protocol/index.ts";
import { agentEvent, eventId, HOST, makeHome, payloads, readJournal, startDaemon, until, type DaemonProc } from "../support/recorder.ts";
import { SERVER_KEY_ID, SERVER_SECRET } from "../support/sample-run.ts";
import { HOST_ID, payloadsOf, rig } from "../support/sources.ts";

const running: DaemonProc[] = [];
afterEach(async () => {
  for (const d of running.splice(0)) {
    d.proc.kill("SIGKILL");
    await d.exited;
  }
});

// A line as `tacho hook` spools it when the recorder did not answer.
function spooledLine(agent: string, event: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    v: 1,
    id: eventId(),
    t: Date.now(),
    source: "command",
    harness: null,
    agent,
    event,
    spooled_ms: Date.now(),
    answer: {},
    ...extra,
  };
}

const kinds = (frames: { kind: string }[]) => frames.map((f) => f.kind);

describe("the spool is drained while the recorder runs (issue 10: lines written after its start were stranded)", () => {
  it("a line spooled after the recorder started is recorded by its timer, without a restart", async () => {
    const home = await makeHome({ policy: {} });
    running.push(await startDaemon(home, { OXAGEN_SPOOL_INTERVAL_MS: "100" }));
    await agentEvent(home, "late-agent", { session_id: "r1", hook_event_name: "SessionStart" });
    appendSpool(
      join(home.dir, "spool"),
      spooledLine("late-agent", { session_id: "r1", hook_event_name: "UserPromptSubmit", prompt: "go" }),
    );
    const chain = runIdFor(HOST, "late-agent", "r1");
    const view = await until(() => {
      const v = readJournal(home).get(chain);
      return v?.frames.some((f) => f.kind === "turn_start") ? v : null;
    });
    expect(kinds(view.frames)).toEqual(["agent_start", "telemetry_gap", "turn_start"]);
    expect(payloads(view)[1]).toMatchObject({ cause: "daemon_down", path: "recorder" });
    await until(() => !existsSync(join(home.dir, "spool/events.jsonl")) && !existsSync(join(home.dir, "spool/replaying.jsonl")));
  });

  it("what waits in the spool is pending in recorder-status.json (it said 0 while events were stranded)", async () => {
    const home = await makeHome({ policy: {} });
    running.push(await startDaemon(home, { OXAGEN_SPOOL_INTERVAL_MS: "3600000", OXAGEN_STATUS_INTERVAL_MS: "50" }));
    appendSpool(join(home.dir, "spool"), spooledLine("wait-agent", { session_id: "w1", hook_event_name: "SessionStart" }));
    const status = await until(() => {
      const s = JSON.parse(readFileSync(join(home.dir, "recorder-status.json"), "utf8")) as {
        pending: { spooled: number };
        spool: { by_label: Record<string, { events: number }> };
      };
      return s.pending.spooled > 0 ? s : null;
    });
    expect(status.pending.spooled).toBe(1);
    expect(status.spool.by_label).toEqual({ "wait-agent": { events: 1, oldest_ms: expect.any(Number) } });
  });

  it("a line spooled while it runs is recorded before the next hook's step", async () => {
    const home = await makeHome({ policy: {} });
    running.push(await startDaemon(home, { OXAGEN_SPOOL_INTERVAL_MS: "3600000" }));
    await agentEvent(home, "order-agent", { session_id: "r2", hook_event_name: "SessionStart" });
    appendSpool(
      join(home.dir, "spool"),
      spooledLine("order-agent", {
        session_id: "r2",
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: "ls" },
        tool_use_id: "t1",
      }),
    );
    await agentEvent(home, "order-agent", { session_id: "r2", hook_event_name: "Stop", last_assistant_message: "done" });
    const view = readJournal(home).get(runIdFor(HOST, "order-agent", "r2"))!;
    expect(kinds(view.frames)).toEqual(["agent_start", "telemetry_gap", "policy_decision", "tool_requested", "turn_end"]);
    expect(payloads(view)[2]).toMatchObject({ offline: true, tool_use_id: "t1" });
  });
});

function signed(policy = defaultPolicy("ws_test", 1)) {
  const s = signPolicy(policy, SERVER_SECRET, SERVER_KEY_ID);
  return { policy, etag: policyEtag(s) };
}

function inProcess() {
  let spooled: SpoolReplayer | undefined;
  const r = rig(undefined, { beforeHook: () => spooled?.drain() });
  r.recorder.policy = signed();
  const spool = join(r.dir, "spool");
  const replayer = new SpoolReplayer(r.recorder, spool, (m) => r.logs.push(m));
  spooled = replayer;
  const send = (event: Record<string, unknown>, id = eventId()) =>
    r.recorder.handle({ id, t: Date.now(), source: "command", harness: null, agent: "rig-agent", event } as HookRequest);
  return { r, spool, replayer, send };
}

describe("steps of a session that already ended (issue 10: they were answered and dropped)", () => {
  it("a reused session id starts a new run; a late step of an ended run starts one after a gap naming the run it follows", () => {
    const { r, send } = inProcess();
    const s = { session_id: "my-run-42" };
    send({ ...s, hook_event_name: "SessionStart" });
    send({ ...s, hook_event_name: "SessionEnd", reason: "done" });
    // A late step of the ended run: never answered and dropped.
    send({ ...s, hook_event_name: "Stop", last_assistant_message: "late" });
    const second = runIdFor(HOST_ID, "rig-agent", "my-run-42#2");
    expect(kinds(r.frames(second))).toEqual(["telemetry_gap", "turn_end"]);
    expect(String(payloadsOf(r.frames(second))[0]!.detail)).toContain(runIdFor(HOST_ID, "rig-agent", "my-run-42"));
    send({ ...s, hook_event_name: "SessionEnd", reason: "done" });
    // The agent runs again with its hardcoded id: a third run, which starts cleanly.
    send({ ...s, hook_event_name: "SessionStart" });
    send({ ...s, hook_event_name: "UserPromptSubmit", prompt: "again" });
    const third = runIdFor(HOST_ID, "rig-agent", "my-run-42#3");
    expect(kinds(r.frames(third))).toEqual(["agent_start", "turn_start"]);
    expect(payloadsOf(r.frames(third))[0]).toMatchObject({ session_id: "my-run-42#3" });
    for (const c of [runIdFor(HOST_ID, "rig-agent", "my-run-42"), second, third]) expect(verifyChain(c, r.frames(c)).problems).toEqual([]);
    expect(r.logs.filter((l) => l.includes("not recorded"))).toEqual([]);
  });

  it("a spooled step of a session that ended before the replay is recorded, not deleted", () => {
    const { r, spool, replayer, send } = inProcess();
    const s = { session_id: "ended-1" };
    send({ ...s, hook_event_name: "SessionStart" });
    send({ ...s, hook_event_name: "SessionEnd" });
    appendSpool(
      spool,
      spooledLine("rig-agent", { ...s, hook_event_name: "PostToolUse", tool_name: "Bash", tool_input: { command: "make" } }),
    );
    replayer.drain();
    const next = runIdFor(HOST_ID, "rig-agent", "ended-1#2");
    expect(kinds(r.frames(next))).toEqual(["telemetry_gap", "telemetry_gap", "tool_call", "command"]);
    expect(payloadsOf(r.frames(next)).map((p) => p.cause)).toEqual(["other", "daemon_down", undefined, undefined]);
    expect(existsSync(join(spool, "events.jsonl"))).toBe(false);
  });
});

describe("a spool line an older tacho hook cut without hashing what it cut", () => {
  it("is recorded as a gap saying its content is unknown, not as the hash of an empty prompt", () => {
    const { r, spool, replayer } = inProcess();
    const line = spooledLine(
      "rig-agent",
      { session_id: "old-1", hook_event_name: "UserPromptSubmit" },
      { oversize: { bytes: 5_242_900, dropped_fields: ["prompt"] } },
    );
    appendSpool(spool, line);
    replayer.drain();
    const p = payloadsOf(r.frames(runIdFor(HOST_ID, "rig-agent", "old-1")));
    expect(p.map((x) => x.cause)).toEqual(["daemon_down", "other"]);
    expect(String(p[1]!.detail)).toMatch(/5242900 bytes was cut by an older tacho hook \(prompt\); its content hashes are unknown/);
  });
});

describe("a hook that gave up on a live recorder (issue 10: the record held a decision the agent never got)", () => {
  it("records the decision the agent acted on, offline, and what it meant for the call, once", () => {
    const { r, spool, replayer } = inProcess();
    const event = {
      session_id: "t-1",
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_input: { command: "make" },
      tool_use_id: "tu-1",
    };
    const req = { id: eventId(), t: Date.now(), source: "command", harness: null, agent: "rig-agent", event };
    // The recorder recorded its own decision (no clause: none) ...
    expect(r.recorder.handle(req as HookRequest)).toEqual({});
    // ... but the hook's budget ran out first; with no verified policy cached it refused the call.
    const offline = {
      hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "no verified policy" },
      enforcement_tier: "client_attested",
    };
    const verdict = { subject: "tool", decision: "deny", mode: "enforce", reason: "no verified policy", rule: "no_policy" };
    const line = { ...req, v: 1, spooled_ms: Date.now(), answer: offline, verdict, why: "timeout" };
    appendSpool(spool, line);
    replayer.drain();
    appendSpool(spool, line);
    replayer.drain();
    const chain = runIdFor(HOST_ID, "rig-agent", "t-1");
    const frames = r.frames(chain);
    expect(kinds(frames)).toEqual(["policy_decision", "tool_requested", "policy_decision", "token_denied"]);
    const p = payloadsOf(frames);
    expect(p[0]).toMatchObject({ decision: "none", rule: "default" });
    expect(p[2]).toMatchObject({ decision: "deny", rule: "no_policy", offline: true, tool_use_id: "tu-1" });
    expect(String(p[2]!.reason)).toMatch(/gave up waiting/);
  });
});

describe("a hook that gave up on a live recorder that refused the call", () => {
  it("records the offline answer that let the call through as a tool_requested, also after a restart", () => {
    const deny = {
      ...defaultPolicy("ws_test", 1),
      tools: [{ id: "no-make", tool: "*", command: "make*", decision: "deny" as const, reason: "no builds" }],
    };
    const first = rig();
    first.recorder.policy = signed(deny);
    const event = {
      session_id: "t-2",
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_input: { command: "make" },
      tool_use_id: "tu-2",
    };
    const req = { id: eventId(), t: Date.now(), source: "command", harness: null, agent: "rig-agent", event };
    expect(first.recorder.handle(req as HookRequest)).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
    first.close();
    // The recorder restarts (its journal read back); the hook had given up and answered from an older policy: no decision.
    const r = rig(first.dir);
    r.recorder.policy = signed(deny);
    const verdict = { subject: "tool", decision: "none", mode: "enforce", reason: "no clause of the policy decides Bash", rule: "default" };
    const spool = join(r.dir, "spool");
    appendSpool(spool, { ...req, v: 1, spooled_ms: Date.now(), answer: { enforcement_tier: "client_attested" }, verdict, why: "timeout" });
    new SpoolReplayer(r.recorder, spool, (m) => r.logs.push(m)).drain();
    const frames = r.frames(runIdFor(HOST_ID, "rig-agent", "t-2"));
    expect(kinds(frames)).toEqual(["policy_decision", "token_denied", "policy_decision", "tool_requested"]);
    expect(payloadsOf(frames)[2]).toMatchObject({ decision: "none", offline: true, tool_use_id: "tu-2" });
  });
});

describe("nothing leaves the spool unrecorded", () => {
  it("a line the recorder cannot record goes back to the spool, and after the last attempt is recorded as a gap", () => {
    const { r, spool, replayer } = inProcess();
    const line = spooledLine("rig-agent", { session_id: "p-1", hook_event_name: "Stop" });
    const handle = r.recorder.handle.bind(r.recorder);
    r.recorder.handle = (req) => {
      if (req.id === line.id) throw new Error("disk on fire");
      return handle(req);
    };
    appendSpool(spool, line);
    for (let i = 1; i < MAX_ATTEMPTS; i++) {
      replayer.drain();
      const kept = readFileSync(join(spool, "events.jsonl"), "utf8").trim().split("\n");
      expect(kept.map((l) => JSON.parse(l).attempts)).toEqual([i]);
    }
    replayer.drain();
    expect(existsSync(join(spool, "events.jsonl"))).toBe(false);
    const gaps = payloadsOf(r.frames(runIdFor(HOST_ID, "rig-agent", "p-1")), "telemetry_gap");
    expect(gaps.at(-1)).toMatchObject({ cause: "other" });
    expect(String(gaps.at(-1)!.detail)).toMatch(/Stop event could not be recorded after 5 attempts: disk on fire/);
  });
});

describe("an HTTP hook the recorder fails to record (issue 10: it got 200 {})", () => {
  it("is answered 500 (a non-blocking error to Claude Code), spooled, and recorded by the next replay", async () => {
    const { r, spool, replayer } = inProcess();
    const handle = r.recorder.handle.bind(r.recorder);
    let broken = true;
    r.recorder.handle = (req) => {
      if (broken) throw new Error("journal unavailable");
      return handle(req);
    };
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const http = await listenHttp(port, {
      http: (label, payload) => httpHook(r.recorder, spool, label, payload),
      secret: () => "s".repeat(64),
      health: () => ({}),
      log: () => {},
    });
    try {
      const res = await fetch(`http://127.0.0.1:${port}/hooks/claude-code`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-oxagen-hook-secret": "s".repeat(64) },
        body: JSON.stringify({ session_id: "h-1", hook_event_name: "PostToolUse", tool_name: "Read", tool_input: { file_path: "/a" } }),
      });
      expect(res.status).toBe(500);
      expect(await res.json()).toMatchObject({ error: "recorder_error" });
    } finally {
      await http.close();
    }
    broken = false;
    replayer.drain();
    expect(kinds(r.frames(runIdFor(HOST_ID, "claude-code", "h-1")))).toEqual(["telemetry_gap", "tool_call", "file_io"]);
  });
});

describe("a PreToolUse with no usable session_id (issue 10: answered {} and recorded nowhere)", () => {
  it("is refused at the veto point and recorded on the computer's own chain", () => {
    const { r, send } = inProcess();
    for (const session_id of [undefined, "", 7]) {
      const answer = send({
        session_id,
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: "ls" },
        tool_use_id: "x",
      });
      expect(answer).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
    }
    expect(send({ hook_event_name: "UserPromptSubmit", prompt: "hi" })).toMatchObject({ decision: "block" });
    const frames = r.frames(hostChainId(HOST_ID));
    expect(kinds(frames)).toEqual([
      "policy_decision",
      "token_denied",
      "policy_decision",
      "token_denied",
      "policy_decision",
      "token_denied",
      "policy_decision",
      "turn_start",
    ]);
    expect(payloadsOf(frames, "policy_decision").map((p) => p.rule)).toEqual(["no_session", "no_session", "no_session", "no_session"]);
  });
});
