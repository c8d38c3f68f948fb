// Who may answer a hook (docs/collector.md, "Who may answer a hook"): the hook talks to its own
// enrollment's recorder over the socket in its 0700 state directory and to nothing else; HTTP
// hooks carry the enrollment's secret; a hook that finds the recorder down starts it.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startRecorderSoon } from "../../collector/commands/hook/offline.ts";
import { runIdFor } from "../../protocol/index.ts";
import {
  HOST,
  makeHome,
  NODE,
  payloads,
  postHook,
  readJournal,
  socketHealth,
  startDaemon,
  TACHO,
  until,
  Recorders,
  type Home,
} from "../support/recorder.ts";

const recorders = new Recorders();
const running = recorders.running;
const servers: Server[] = [];
afterEach(async () => {
  await recorders.stop();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

const POLICY = { tools: [{ id: "no-rm", tool: "Bash", command: "rm *", decision: "deny" as const, reason: "no deletes" }] };

function hook(home: Home, args: string[], payload: Record<string, unknown>): Record<string, unknown> {
  const r = spawnSync(NODE, [TACHO, "hook", ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: home.dir, OXAGEN_HOME: home.dir },
    input: JSON.stringify(payload),
    encoding: "utf8",
  });
  expect(r.status).toBe(0);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

function spooled(home: Home): Record<string, unknown>[] {
  try {
    return readFileSync(join(home.dir, "spool/events.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  } catch {
    return [];
  }
}

const pre = (command: string) => ({
  session_id: "s-1",
  hook_event_name: "PreToolUse",
  tool_name: "Bash",
  tool_input: { command },
  tool_use_id: "t-1",
});

describe("two enrollments on one machine", () => {
  it("never talk to each other's recorder, even configured with the same hook port", async () => {
    const b = await makeHome({ policy: {}, secret: "b".repeat(64) });
    running.push(await startDaemon(b));
    const a = await makeHome({ policy: POLICY, port: b.port, secret: "a".repeat(64) });

    // A's command hook: B's recorder would have let it through (no clause); A's policy denies it.
    const answer = hook(a, ["--agent", "agent-a"], pre("rm -rf /"));
    expect(answer).toMatchObject({ enforcement_tier: "client_attested", hookSpecificOutput: { permissionDecision: "deny" } });
    expect(spooled(a)).toHaveLength(1);
    // A's HTTP hook reaches B's port, carrying A's secret: B refuses it.
    const http = await postHook(a, { session_id: "s-1", hook_event_name: "PostToolUse", tool_name: "Bash", tool_input: { command: "ls" } });
    expect(http.status).toBe(401);
    expect(readJournal(b).has(runIdFor(HOST, "agent-a", "s-1"))).toBe(false);
    expect(readJournal(b).has(runIdFor(HOST, "claude-code", "s-1"))).toBe(false);
  });

  it("a second recorder for the same enrollment refuses to start while the first runs", async () => {
    const home = await makeHome();
    running.push(await startDaemon(home));
    const second = spawnSync(NODE, [TACHO, "daemon", "run"], { env: { ...process.env, OXAGEN_HOME: home.dir }, encoding: "utf8" });
    expect(second.status).toBe(1);
    expect(second.stderr).toMatch(/already running/);
    expect((await socketHealth(home))?.pid).toBe(running[0]!.proc.pid);
  });
});

describe("HTTP hooks carry the enrollment's secret", () => {
  it("a missing or wrong secret is refused (401) and records nothing; the right one is recorded", async () => {
    const home = await makeHome({ policy: {} });
    running.push(await startDaemon(home));
    const post = (session: string, headers: Record<string, string> = {}) =>
      postHook(home, { session_id: session, hook_event_name: "PostToolUse", tool_name: "Bash", tool_input: { command: "ls" } }, headers);
    expect((await post("missing", { "x-oxagen-hook-secret": "" })).status).toBe(401);
    expect((await post("wrong", { "x-oxagen-hook-secret": "0".repeat(64) })).status).toBe(401);
    expect((await post("short", { "x-oxagen-hook-secret": "0" })).status).toBe(401);
    expect((await post("right")).status).toBe(200);
    const journal = readJournal(home);
    for (const s of ["missing", "wrong", "short"]) expect(journal.has(runIdFor(HOST, "claude-code", s))).toBe(false);
    expect(journal.get(runIdFor(HOST, "claude-code", "right"))!.frames.map((f) => f.kind)).toEqual(["tool_call", "command"]);
  });
});

describe("a stranger holding the hook port", () => {
  it("keeps HTTP hooks out, not the recorder: command hooks are answered on the socket, and the port is taken when it frees", async () => {
    const home = await makeHome({ policy: POLICY });
    const stranger = createServer((s) => s.end());
    servers.push(stranger);
    await new Promise<void>((r) => stranger.listen(home.port, "127.0.0.1", r));
    const d = await startDaemon(home, { OXAGEN_HTTP_RETRY_MS: "100" });
    running.push(d);
    expect((await socketHealth(home))?.http).toBe("unavailable");
    const answer = hook(home, ["--agent", "agent-s"], pre("rm -rf /"));
    expect(answer).toEqual({
      hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "no deletes" },
    });
    await new Promise((r) => stranger.close(r));
    servers.splice(0);
    await until(async () => (await socketHealth(home))?.http === "listening");
    expect((await postHook(home, { session_id: "s-2", hook_event_name: "Stop" })).status).toBe(200);
  });
});

describe("a hook that finds the recorder down", () => {
  it("answers from the cached policy, spools, and starts the recorder, which records the spooled step", async () => {
    const home = await makeHome({ policy: POLICY, autostart: true });
    recorders.autostarted.push(home.dir);
    const answer = hook(home, ["--agent", "agent-up"], pre("rm -rf /"));
    expect(answer).toMatchObject({ enforcement_tier: "client_attested", hookSpecificOutput: { permissionDecision: "deny" } });
    await until(() => socketHealth(home).catch(() => null));
    const chain = runIdFor(HOST, "agent-up", "s-1");
    const view = await until(() => readJournal(home).get(chain));
    expect(view.frames.map((f) => f.kind)).toEqual(["telemetry_gap", "policy_decision", "token_denied"]);
    expect(payloads(view)[1]).toMatchObject({ decision: "deny", rule: "no-rm", offline: true });
  });

  it("starts it at most once a minute", () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-autostart-"));
    const saved = process.env.OXAGEN_HOME;
    process.env.OXAGEN_HOME = dir;
    try {
      // Not enrolled: the recorder it starts exits at once; only the stamp matters here.
      expect(startRecorderSoon()).toBe(true);
      expect(existsSync(join(dir, "recorder-autostart"))).toBe(true);
      expect(startRecorderSoon()).toBe(false);
      expect(startRecorderSoon(Date.now() + 61_000)).toBe(true);
    } finally {
      process.env.OXAGEN_HOME = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("an enrollment made before hook secrets", () => {
  it("gets one on re-enroll, written into Claude Code's HTTP hook entries, and the recorder then checks it", async () => {
    const home = await makeHome({ policy: {} });
    const hostPath = join(home.dir, "host.json");
    const { hook_secret: _old, ...legacy } = JSON.parse(readFileSync(hostPath, "utf8")) as Record<string, unknown>;
    writeFileSync(hostPath, JSON.stringify(legacy), { mode: 0o600 });
    const claude = mkdtempSync(join(tmpdir(), "oxagen-claude-"));
    const env = { ...process.env, OXAGEN_HOME: home.dir, CLAUDE_CONFIG_DIR: claude, TACHO_HOOK_COMMAND: `${NODE} ${TACHO}` };
    const r = spawnSync(NODE, [TACHO, "enroll", "--harness", "claude-code", "--no-start"], { env, encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const secret = (JSON.parse(readFileSync(hostPath, "utf8")) as { hook_secret?: string }).hook_secret;
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const settings = JSON.parse(readFileSync(join(claude, "settings.json"), "utf8")) as {
      hooks: Record<string, { hooks: { headers?: Record<string, string> }[] }[]>;
    };
    expect(settings.hooks.PostToolUse![0]!.hooks[0]!.headers).toEqual({ "x-oxagen-hook-secret": secret });
    running.push(await startDaemon(home));
    const event = { session_id: "legacy-1", hook_event_name: "Stop" };
    expect((await postHook({ port: home.port, secret: secret! }, event)).status).toBe(200);
    expect((await postHook({ port: home.port, secret: "f".repeat(64) }, event)).status).toBe(401);
  });
});
