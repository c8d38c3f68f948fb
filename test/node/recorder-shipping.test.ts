import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { parseLock, runIdFor, sha256Hex, verifyChain } from "../../protocol/index.ts";
import {
  agentEvent,
  freePort,
  HOST,
  makeHome,
  NODE,
  readJournal,
  sleep,
  startDaemon,
  TACHO,
  until,
  type DaemonProc,
} from "../support/recorder.ts";
import { StubServer } from "../support/stub-server.ts";

const running: DaemonProc[] = [];
const servers: StubServer[] = [];
afterEach(async () => {
  for (const d of running.splice(0)) {
    d.proc.kill("SIGKILL");
    await d.exited;
  }
  for (const s of servers.splice(0)) await s.stop();
});

const FAST = {
  OXAGEN_SHIP_BACKOFF_MS: "50",
  OXAGEN_SHIP_BACKOFF_MAX_MS: "300",
  OXAGEN_LOCK_INTERVAL_MS: "200",
  OXAGEN_STATUS_INTERVAL_MS: "100",
  OXAGEN_POLICY_INTERVAL_MS: "200",
};

function status(dir: string) {
  try {
    return JSON.parse(readFileSync(join(dir, "recorder-status.json"), "utf8")) as {
      pending: { frames: number; locks: number; bodies: number };
      last_delivery_ms: number | null;
      last_error: string | null;
      policy_etag: string | null;
    };
  } catch {
    return null;
  }
}

describe("recorder shipping", () => {
  it("delivers every frame, lock and kept body through a 503 + Retry-After outage and a refused connection, then drains the journal", async () => {
    const port = await freePort();
    const server = new StubServer();
    servers.push(server);
    const home = await makeHome({ server: `http://127.0.0.1:${port}` });
    const d = await startDaemon(home, FAST);
    running.push(d);
    const send = (event: Record<string, unknown>) => agentEvent(home, "ship-agent", { session_id: "ship-1", ...event });

    // Server down (connection refused) while the session runs.
    await send({ hook_event_name: "SessionStart" });
    await send({ hook_event_name: "UserPromptSubmit", prompt: "deploy it" });
    // Enough steps that the chain's file passes the journal's compaction rule (idle, over 50 lines)
    // by its events alone: the bodies' acks are one line per upload, not one per body.
    const TOOLS = 30;
    for (let i = 0; i < TOOLS; i++) {
      await send({ hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command: `make step${i}` }, tool_use_id: `c${i}` });
      await send({
        hook_event_name: "PostToolUse",
        tool_name: "Bash",
        tool_input: { command: `make step${i}` },
        tool_use_id: `c${i}`,
        tool_response: { stdout: `ok ${i}` },
      });
    }
    await until(() => status(home.dir)?.last_error?.includes("ingest") || status(home.dir)?.last_error?.includes("fetch"));

    // Then up but answering 503 with Retry-After for a while.
    server.unavailable = 3;
    await server.start(port);
    await send({ hook_event_name: "Stop", last_assistant_message: "deployed" });
    await send({ hook_event_name: "SessionEnd", reason: "other" });

    const chain = runIdFor(HOST, "ship-agent", "ship-1");
    await until(() => {
      const s = status(home.dir);
      return (
        s &&
        s.pending.frames === 0 &&
        s.pending.locks === 0 &&
        s.pending.bodies === 0 &&
        server.chains.get(chain)?.locks.some((l) => parseLock(l).final)
      );
    });
    expect(server.unavailable).toBe(0);
    const frames = server.stored(chain);
    expect(frames.length).toBe(2 + TOOLS * 4 + 2);
    expect(verifyChain(chain, frames).problems).toEqual([]);
    expect(server.chains.get(chain)!.run).toEqual({ harness: "ship-agent", agent: "ship-agent", session_id: "ship-1" });
    const locks = server.chains.get(chain)!.locks.map(parseLock);
    expect(locks.at(-1)).toMatchObject({ final: true, count: frames.length });
    // Every kept body arrived, named by its hash, tagged with run and role.
    const refs = frames
      .flatMap((f) => (JSON.parse(f.payload).bodies ?? []) as { sha256: string; kept: boolean; role: string }[])
      .filter((b) => b.kept);
    expect(refs.length).toBeGreaterThan(40);
    for (const r of refs) {
      const got = server.bodies.get(r.sha256)!;
      expect(sha256Hex(got.bytes)).toBe(r.sha256);
      expect(got).toMatchObject({ run: chain, role: r.role });
    }
    // The journal dropped what the server acknowledged.
    await until(() => readJournal(home).get(chain)!.frames.length < frames.length);
  });

  it("resends exactly the seqs the server says are missing, and nothing it already holds", async () => {
    const port = await freePort();
    const server = new StubServer();
    servers.push(server);
    const home = await makeHome({ server: `http://127.0.0.1:${port}` });
    const d = await startDaemon(home, FAST);
    running.push(d);
    const send = (event: Record<string, unknown>) => agentEvent(home, "gap-agent", { session_id: "gap-1", ...event });
    await send({ hook_event_name: "SessionStart" });
    await send({ hook_event_name: "UserPromptSubmit", prompt: "tidy up" });
    for (let i = 0; i < 3; i++)
      await send({ hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command: `echo ${i}` }, tool_use_id: `t${i}` });
    // Everything is journaled while the server is down; then the first batch loses seqs 2 and 3.
    server.loseOnce.add(2).add(3);
    await server.start(port);
    const chain = runIdFor(HOST, "gap-agent", "gap-1");
    await until(() => server.stored(chain).length === 8 && status(home.dir)?.pending.frames === 0);
    const sends = new Map<number, number>();
    for (const r of server.received.filter((r) => r.chain === chain)) for (const seq of r.seqs) sends.set(seq, (sends.get(seq) ?? 0) + 1);
    expect([...sends.entries()].sort((a, b) => a[0] - b[0])).toEqual([
      [0, 1],
      [1, 1],
      [2, 2],
      [3, 2],
      [4, 1],
      [5, 1],
      [6, 1],
      [7, 1],
    ]);
    expect(verifyChain(chain, server.stored(chain)).problems).toEqual([]);
  });

  it("refreshes the policy by ETag, verifies it under the pinned key and decides from it", async () => {
    const server = new StubServer();
    servers.push(server);
    server.policy = {
      ...server.policy,
      tools: [{ id: "no-curl", tool: "Bash", command: "curl *", decision: "deny", reason: "no network from shell" }],
    };
    const port = await server.start();
    const home = await makeHome({ server: `http://127.0.0.1:${port}` });
    const d = await startDaemon(home, FAST);
    running.push(d);
    await until(() => status(home.dir)?.policy_etag);
    const answer = await agentEvent(home, "pol-agent", {
      session_id: "p1",
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_input: { command: "curl https://x.example" },
    });
    expect(answer.answer).toMatchObject({
      hookSpecificOutput: { permissionDecision: "deny", permissionDecisionReason: "no network from shell" },
    });
    const cached = JSON.parse(readFileSync(join(home.dir, "policy.json"), "utf8"));
    expect(cached.etag).toBe(status(home.dir)!.policy_etag);
    const before = server.requests;
    await until(() => server.requests > before + 2);
    expect(status(home.dir)!.policy_etag).toBe(cached.etag);
    await sleep(10);
  });

  it("keeps shipping the other chains when the server refuses a batch for one chain it names", async () => {
    const port = await freePort();
    const server = new StubServer();
    servers.push(server);
    const bad = runIdFor(HOST, "bad-agent", "bad-1");
    const good = runIdFor(HOST, "good-agent", "good-1");
    server.invalidChains.add(bad);
    const home = await makeHome({ server: `http://127.0.0.1:${port}` });
    const d = await startDaemon(home, FAST);
    running.push(d);
    await agentEvent(home, "bad-agent", { session_id: "bad-1", hook_event_name: "SessionStart" });
    await agentEvent(home, "good-agent", { session_id: "good-1", hook_event_name: "SessionStart" });
    await agentEvent(home, "good-agent", { session_id: "good-1", hook_event_name: "UserPromptSubmit", prompt: "go" });
    await server.start(port);
    await until(() => server.stored(good).length === 2);
    expect(server.stored(bad)).toEqual([]);
    await until(() => status(home.dir)?.last_error?.includes(bad));
    expect(readJournal(home).get(bad)!.frames.length).toBe(1);
  });

  it("holds back only the chains a 429 names as over a quota, and ships them once the quota allows", async () => {
    const port = await freePort();
    const server = new StubServer();
    servers.push(server);
    const busy = runIdFor(HOST, "busy-agent", "busy-1");
    const calm = runIdFor(HOST, "calm-agent", "calm-1");
    server.overQuota.add(busy);
    const home = await makeHome({ server: `http://127.0.0.1:${port}` });
    const d = await startDaemon(home, FAST);
    running.push(d);
    await agentEvent(home, "busy-agent", { session_id: "busy-1", hook_event_name: "SessionStart" });
    await agentEvent(home, "calm-agent", { session_id: "calm-1", hook_event_name: "SessionStart" });
    await server.start(port);
    await until(() => server.stored(calm).length === 1);
    expect(server.stored(busy)).toEqual([]);
    await until(() => status(home.dir)?.last_error?.includes("quota"));
    server.overQuota.clear();
    await until(() => server.stored(busy).length === 1);
  });

  it("a stop whose last shipment the server never answers still ends (tacho daemon stop succeeds), and the next start ships what it held", async () => {
    const server = new StubServer();
    servers.push(server);
    server.stallIngest = true;
    const port = await server.start();
    const home = await makeHome({ server: `http://127.0.0.1:${port}` });
    const env = { ...FAST, OXAGEN_STOP_MS: "1000" };
    const d = await startDaemon(home, env);
    running.push(d);
    await agentEvent(home, "stall-agent", { session_id: "stall-1", hook_event_name: "SessionStart" });
    await agentEvent(home, "stall-agent", { session_id: "stall-1", hook_event_name: "UserPromptSubmit", prompt: "go" });
    await until(() => server.stalled >= 1);

    // Not spawnSync: the stand-in server is in this process and must go on holding its connection.
    const stopped = await promisify(execFile)(NODE, [TACHO, "daemon", "stop"], { env: { ...process.env, OXAGEN_HOME: home.dir } });
    expect(stopped.stderr).toBe("");
    expect(await d.exited).toBe(0);
    expect(d.stderr()).toContain("stays in the journal for the next start");
    const chain = runIdFor(HOST, "stall-agent", "stall-1");
    expect(server.stored(chain)).toEqual([]);

    server.stallIngest = false;
    running.push(await startDaemon(home, env));
    await until(() => server.stored(chain).length >= 2);
    expect(verifyChain(chain, server.stored(chain)).problems).toEqual([]);
  });
});
