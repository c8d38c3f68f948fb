import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseLock, PAYLOADS, runIdFor, verifyChain } from "../../protocol/index.ts";
import { Journal } from "../../collector/recorder/journal/index.ts";
import { Backfill } from "../../collector/recorder/sources/backfill.ts";
import { HOST, makeHome, NODE, payloads, readJournal, ROOT } from "../support/recorder.ts";
import { StubServer } from "../support/stub-server.ts";

const FIX = join(import.meta.dirname, "../fixtures/transcripts/claude-session.jsonl");
const REAL = join(import.meta.dirname, "../fixtures/transcripts");
const SESSION = "4d5611e5-0c1e-4f1b-9d0e-2f3a4b5c6d7e";
const servers: StubServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.stop();
});

/** Runs oxagen without blocking this process (the stub server answers from it). */
function oxagen(home: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawn(NODE, [join(ROOT, "collector/bin/oxagen.js"), ...args], {
    env: { ...process.env, OXAGEN_HOME: home, OXAGEN_BACKFILL_SHIP_MS: "10000" },
  });
  let stdout = "";
  let stderr = "";
  p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => p.on("close", (code) => resolve({ code, stdout, stderr })));
}

describe("oxagen agent backfill", () => {
  it("rebuilds the session in coverage order, every frame backfilled, usage de-duplicated, no thinking text", () => {
    const b = new Backfill(null);
    for (const line of readFileSync(FIX, "utf8").split("\n")) if (line) b.line(line);
    b.finish();
    const kinds = b.steps.map((s) => s.kind);
    expect(kinds.slice(0, 4)).toEqual(["agent_start", "telemetry_gap", "turn_start", "tool_requested"]);
    expect(kinds.filter((k) => k === "llm_call")).toHaveLength(5);
    expect(kinds.filter((k) => k === "tool_call")).toHaveLength(2);
    expect(kinds.slice(-3)).toEqual(["turn_end", "telemetry_gap", "agent_stop"]);
    for (const s of b.steps) {
      expect(s.payload).toMatchObject({ path: "backfill", backfilled: true });
      expect(PAYLOADS[s.kind].safeParse(s.payload).success).toBe(true);
    }
    expect(b.steps[1]!.payload).toMatchObject({ cause: "rebuilt" });
    expect(b.steps.at(-2)!.payload).toMatchObject({ cause: "log_unreadable" });
    expect(JSON.stringify(b.steps.map((s) => s.payload))).not.toContain("SECRET-THOUGHT");
  });

  it("ships a final-locked run through the journal and the shipper; refuses the same session a second time", async () => {
    const server = new StubServer();
    servers.push(server);
    const port = await server.start();
    const home = await makeHome({ server: `http://127.0.0.1:${port}` });
    const first = await oxagen(home.dir, "agent", "backfill", FIX, "--json");
    expect(first.code, first.stderr).toBe(0);
    const run = runIdFor(HOST, "claude-code", SESSION);
    const answer = JSON.parse(first.stdout);
    expect(answer).toMatchObject({ ok: true, run, session_id: SESSION, shipped: true, skipped_lines: 1 });
    const stored = server.stored(run);
    expect(stored.length).toBe(answer.frames);
    expect(verifyChain(run, readJournal(home).get(run)!.frames).problems).toEqual([]);
    expect(server.chains.get(run)!.locks.map(parseLock).at(-1)).toMatchObject({ final: true, count: stored.length });
    expect(payloads(readJournal(home).get(run)!).every((p) => p.backfilled === true)).toBe(true);

    const again = await oxagen(home.dir, "agent", "backfill", FIX);
    expect(again.code).toBe(1);
    expect(again.stdout).toContain("already recorded");
    expect(server.stored(run).length).toBe(stored.length);
  });

  it("refuses a session recorded live and a file that is not a transcript, with clear answers", async () => {
    const home = await makeHome();
    const none = await oxagen(home.dir, "agent", "backfill", join(ROOT, "package.json"));
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("holds no Claude Code session");
    const missing = await oxagen(home.dir, "agent", "backfill");
    expect(missing.code).toBe(2);
    // The session was recorded live: its run is in the recorder's journal.
    const live = new Journal(join(home.dir, "journal"));
    live.open(runIdFor(HOST, "claude-code", SESSION), { harness: "claude-code", agent: null, session_id: SESSION });
    live.close();
    const refused = await oxagen(home.dir, "agent", "backfill", FIX, "--json");
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false, error: "already_recorded", session_id: SESSION });
  });

  it("asks the server first: refuses a run the server holds, and refuses when it cannot ask", async () => {
    const server = new StubServer();
    await server.start();
    try {
      const home = await makeHome({ server: `http://127.0.0.1:${server.port}` });
      server.heldRuns.add(runIdFor(HOST, "claude-code", SESSION));
      const held = await oxagen(home.dir, "agent", "backfill", FIX, "--json");
      expect(held.code).toBe(1);
      expect(JSON.parse(held.stdout)).toMatchObject({ ok: false, error: "already_recorded" });
    } finally {
      await server.stop();
    }
    const offline = await oxagen((await makeHome()).dir, "agent", "backfill", FIX, "--json");
    expect(offline.code).toBe(1);
    expect(JSON.parse(offline.stdout)).toMatchObject({ ok: false, error: "server_unreachable" });
  });

  it("includes a subagent's model and tool calls, between a subagent_start and a subagent_stop, placed by time", () => {
    const dir = join(REAL, "claude-2.1.332-subagent");
    const session = "44d42bf1-e215-448a-a40b-6d93a7c0a3ed";
    const b = new Backfill(null);
    for (const line of readFileSync(join(dir, `${session}.jsonl`), "utf8").split("\n")) if (line) b.line(line);
    const sub = readFileSync(join(dir, session, "subagents", "agent-aa6b70651b02c06a2.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean);
    b.subagent(sub, { agentId: "aa6b70651b02c06a2", agentType: "general-purpose" });
    b.finish();
    const kinds = b.steps.map((s) => s.kind);
    const start = kinds.indexOf("subagent_start");
    const stop = kinds.indexOf("subagent_stop");
    expect(b.steps[start]!.payload).toMatchObject({ agent_id: "aa6b70651b02c06a2", agent_type: "general-purpose", backfilled: true });
    // The subagent ran echo sub-one: its request, its result and what it ran, inside the subagent's span
    // (it ran in the background: the session's own steps go on beside it).
    const ran = b.steps.flatMap((s, i) =>
      s.payload.tool_use_id === "toolu_vendor_fxa_8_1" ? [[i, s.kind, s.payload.tool_name ?? s.payload.program]] : [],
    );
    expect(ran.map(([, k, n]) => [k, n])).toEqual([
      ["tool_requested", "Bash"],
      ["tool_call", "Bash"],
      ["command", "echo"],
    ]);
    for (const [i] of ran) expect(i as number).toBeGreaterThan(start);
    for (const [i] of ran) expect(i as number).toBeLessThan(stop);
    // The vendor sent 188 + 97 + 97 to the session and 222 + 133 to its subagent.
    const calls = b.steps.filter((s) => s.kind === "llm_call");
    expect(calls.reduce((a, s) => a + (s.payload.usage as { output_tokens: number }).output_tokens, 0)).toBe(737);
    for (let i = 1; i < b.steps.length; i++) expect(b.steps[i]!.t).toBeGreaterThanOrEqual(b.steps[i - 1]!.t);
    expect(kinds.at(-1)).toBe("agent_stop");
    for (const s of b.steps) expect(PAYLOADS[s.kind].safeParse(s.payload).success).toBe(true);
  });

  for (const [what, fixture, session, output, subagents] of [
    // The compaction call (777) is in subagents/agent-acompact-*.jsonl, after a replay of the conversation.
    ["a compaction call (2.1.90)", "claude-2.1.90-compact", "eaf7c9c9-b740-456d-8eab-528c96dbfc27", 815 + 777, 1],
    // Four agent-<id>.jsonl beside the transcript: three warmups (12 each) and the subagent (222 + 133).
    ["2.0.77 subagent transcripts", "claude-2.0.77-subagent", "66d49389-c0a9-46da-a293-2c73ef5640e9", 188 + 36 + 355 + 97, 4],
  ] as const)
    it(`oxagen agent backfill reads ${what}: every model call once`, async () => {
      const server = new StubServer();
      servers.push(server);
      const port = await server.start();
      const home = await makeHome({ server: `http://127.0.0.1:${port}` });
      const dir = mkdtempSync(join(tmpdir(), "cc-proj-"));
      cpSync(join(REAL, fixture), dir, { recursive: true });
      const done = await oxagen(home.dir, "agent", "backfill", join(dir, `${session}.jsonl`), "--json");
      expect(done.code, done.stderr).toBe(0);
      expect(JSON.parse(done.stdout)).toMatchObject({ ok: true, subagents, skipped_lines: 0, shipped: true });
      const run = runIdFor(HOST, "claude-code", session);
      const calls = payloads(readJournal(home).get(run)!).filter((p) => "usage" in p && "model" in p);
      expect(calls.reduce((a, p) => a + (p.usage as { output_tokens: number }).output_tokens, 0)).toBe(output);
      expect(new Set(calls.map((p) => p.message_id)).size).toBe(calls.length);
      expect(verifyChain(run, readJournal(home).get(run)!.frames).problems).toEqual([]);
    });
});
