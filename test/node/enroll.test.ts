import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startStub, STUB_TOKEN, STUB_WORKSPACE, type StubServer } from "./support/stub-server.ts";
import { childEnv, freePort, OXAGEN, run, TACHO, tempHome } from "./support/tacho.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

const USER_SETTINGS = `{
    "model": "opus",
    "permissions": { "allow": ["Bash(npm test)"], "deny": [] },
    "hooks": {
        "PreToolUse": [
            { "matcher": "Bash", "hooks": [ { "type": "command", "command": "~/.claude/hooks/check.sh", "timeout": 30 } ] }
        ],
        "Stop": [ { "hooks": [ { "type": "command", "command": "notify-send done" } ] } ],
        "FileChanged": [ { "matcher": "*.ts", "hooks": [ { "type": "command", "command": "echo changed" } ] } ]
    },
    "statusLine": { "type": "command", "command": "echo hi" }
}
`;

let stub: StubServer;
let home: ReturnType<typeof tempHome>;
let settingsPath: string;
let hooksPort: number;

beforeAll(async () => {
  stub = await startStub();
});
afterAll(() => stub.close());
beforeEach(async () => {
  home = tempHome();
  settingsPath = join(home.env.CLAUDE_CONFIG_DIR!, "settings.json");
  mkdirSync(home.env.CLAUDE_CONFIG_DIR!, { recursive: true });
  hooksPort = await freePort();
});
afterEach(() => home.cleanup());

// These tests do not need the recorder that enroll starts (a test below checks that it does).
const tacho = (...args: string[]) => run(TACHO, args[0] === "enroll" ? [...args, "--no-start"] : args, { env: home.env });
const enrollArgs = () => [
  "enroll",
  "--server",
  stub.url,
  "--token",
  STUB_TOKEN,
  "--harness",
  "claude-code",
  "--hooks-port",
  String(hooksPort),
  "--json",
];
const settings = () => JSON.parse(readFileSync(settingsPath, "utf8")) as Json;

/** The settings with every handler the collector wrote taken out (groups left empty by that dropped). */
function withoutOurs(json: Json): Json {
  const hooks: Json = {};
  for (const [event, groups] of Object.entries(json.hooks ?? {}) as [string, Json[]][]) {
    const kept = groups
      .map((g) => ({
        ...g,
        hooks: (g.hooks as Json[]).filter(
          (h) => !/tacho(\.js)? hook --harness claude-code|\/hooks\/claude-code$/.test(String(h.command ?? h.url ?? "")),
        ),
      }))
      .filter((g) => g.hooks.length > 0);
    if (kept.length) hooks[event] = kept;
  }
  return { ...json, hooks };
}

describe("tacho enroll into Claude Code", () => {
  it("registers, writes host.json 0600, caches the verified policy and merges hooks without touching other entries", async () => {
    writeFileSync(settingsPath, USER_SETTINGS);
    const r = await tacho(...enrollArgs());
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Json;
    expect(out).toMatchObject({ workspace: STUB_WORKSPACE, ports: { hooks: hooksPort } });
    expect(out.policy_etag).toMatch(/^[0-9a-f]{16}$/);

    const hostPath = join(home.env.OXAGEN_HOME!, "host.json");
    expect(statSync(hostPath).mode & 0o777).toBe(0o600);
    const host = JSON.parse(readFileSync(hostPath, "utf8")) as Json;
    expect(host).toMatchObject({ v: 1, host_id: out.host_id, workspace: STUB_WORKSPACE, server: stub.url, harnesses: ["claude-code"] });
    expect(host.secret_key).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.parse(readFileSync(join(home.env.OXAGEN_HOME!, "policy.json"), "utf8")).etag).toBe(out.policy_etag);

    const s = settings();
    expect(withoutOurs(s)).toEqual(JSON.parse(USER_SETTINGS));
    // The user's own groups keep their place, first in their event.
    expect(s.hooks.PreToolUse[0]).toEqual(JSON.parse(USER_SETTINGS).hooks.PreToolUse[0]);
    expect(s.hooks.Stop[0]).toEqual(JSON.parse(USER_SETTINGS).hooks.Stop[0]);
    for (const event of [
      "SessionStart",
      "UserPromptSubmit",
      "PreToolUse",
      "PermissionRequest",
      "Notification",
      "Stop",
      "SubagentStart",
      "SubagentStop",
      "SessionEnd",
      "PreCompact",
    ]) {
      const ours = (s.hooks[event] as Json[])
        .flatMap((g) => g.hooks as Json[])
        .filter((h) => String(h.command).endsWith("hook --harness claude-code"));
      expect(ours, event).toHaveLength(1);
      expect(ours[0]!.type).toBe("command");
    }
    expect(host.hook_secret).toMatch(/^[0-9a-f]{64}$/);
    for (const event of ["PostToolUse", "PostToolUseFailure"]) {
      expect(s.hooks[event]).toEqual([
        {
          hooks: [
            {
              type: "http",
              url: `http://127.0.0.1:${hooksPort}/hooks/claude-code`,
              headers: { "x-oxagen-hook-secret": host.hook_secret },
              timeout: 10,
            },
          ],
        },
      ]);
    }
  });

  it("re-enrolling (with or without a new token) leaves settings.json byte-identical and never duplicates", async () => {
    writeFileSync(settingsPath, USER_SETTINGS);
    expect((await tacho(...enrollArgs())).code).toBe(0);
    const once = readFileSync(settingsPath, "utf8");
    expect((await tacho("enroll", "--harness", "claude-code")).code).toBe(0);
    expect(readFileSync(settingsPath, "utf8")).toBe(once);
    expect((await tacho(...enrollArgs())).code).toBe(0);
    expect(readFileSync(settingsPath, "utf8")).toBe(once);
  });

  it("says when a settings file others can read now holds the enrollment's secret, and leaves its mode alone", async () => {
    writeFileSync(settingsPath, USER_SETTINGS, { mode: 0o644 });
    chmodSync(settingsPath, 0o644);
    // A home other users can enter (mkdtemp made it 0700, which keeps the file private whatever its mode).
    chmodSync(home.dir, 0o755);
    chmodSync(home.env.CLAUDE_CONFIG_DIR!, 0o755);
    const r = await tacho(...enrollArgs());
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Json;
    expect(readFileSync(settingsPath, "utf8")).toContain(
      JSON.parse(readFileSync(join(home.env.OXAGEN_HOME!, "host.json"), "utf8")).hook_secret,
    );
    expect(out.secret_readable_by_others).toEqual([{ path: settingsPath, mode: "0644" }]);
    expect(statSync(settingsPath).mode & 0o777).toBe(0o644);
    const text = await tacho("enroll", "--harness", "claude-code");
    expect(text.stdout).toContain(`warning: ${settingsPath} (mode 0644) can be read by other users of this computer`);
    expect(text.stdout).toContain(`chmod 600 ${settingsPath}`);

    chmodSync(settingsPath, 0o600);
    expect((await tacho("enroll", "--harness", "claude-code")).stdout).not.toContain("warning:");
    chmodSync(settingsPath, 0o644);
    chmodSync(home.dir, 0o700);
    expect((await tacho("enroll", "--harness", "claude-code")).stdout).not.toContain("warning:");
  });

  it("creates settings.json when Claude Code has none", async () => {
    expect((await tacho(...enrollArgs())).code).toBe(0);
    expect(Object.keys(settings())).toEqual(["hooks"]);
  });

  it("a settings.json that is not valid JSON: clear error, file untouched, token not spent, nothing enrolled", async () => {
    const broken = USER_SETTINGS.replace('"opus",', '"opus",,');
    writeFileSync(settingsPath, broken);
    const before = stub.enrollCalls;
    const r = await tacho(...enrollArgs());
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/settings\.json is not valid JSON.*left untouched/);
    expect(readFileSync(settingsPath, "utf8")).toBe(broken);
    expect(stub.enrollCalls).toBe(before);
    expect(existsSync(join(home.env.OXAGEN_HOME!, "host.json"))).toBe(false);
  });

  it("a refused token exits 1 with the server's reason and how to get a new one", async () => {
    const r = await tacho("enroll", "--server", stub.url, "--token", `oxe_0123456789abcdef_${"6".repeat(48)}`, "--harness", "claude-code");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/HTTP 401.*already used/);
    expect(r.stderr).toMatch(/POST \/v1\/enrollment-tokens/);
    expect(r.stderr).toContain(
      "60 minutes after it was made unless its maker chose another ttl_minutes (the one npm start prints lasts 24 hours)",
    );
  });

  it("a token that is not one (cut short, mistyped) is named as such; nothing is sent or written", async () => {
    const before = stub.enrollCalls;
    const r = await tacho("enroll", "--server", stub.url, "--token", "oxe_bogus", "--harness", "claude-code");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--token oxe_bogus is not an enrollment token: one is oxe_, 16 hex characters, _ and 48 more");
    expect(stub.enrollCalls).toBe(before);
    expect(existsSync(join(home.env.OXAGEN_HOME!, "host.json"))).toBe(false);
  });

  it("an operator token is recognised: the message says which token is needed and how to get one; nothing is sent or written", async () => {
    const before = stub.enrollCalls;
    const operator = `oxo_0123456789abcdef_${"ab".repeat(24)}`;
    const r = await tacho("enroll", "--server", stub.url, "--token", operator, "--harness", "claude-code");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("that is an operator token (oxo_...); enrolling needs a one-time enrollment token (oxe_...)");
    expect(r.stderr).toContain(`${stub.url}/v1/enrollment-tokens`);
    expect(r.stderr).toContain("npm start prints a ready enroll line");
    expect(r.stderr).not.toContain(operator);
    expect(stub.enrollCalls).toBe(before);
    expect(existsSync(join(home.env.OXAGEN_HOME!, "host.json"))).toBe(false);
  });

  it("without --harness it enrolls the computer for custom agents and touches no harness", async () => {
    const r = await tacho("enroll", "--server", stub.url, "--token", STUB_TOKEN, "--hooks-port", String(hooksPort));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/harnesses: none; custom agents call .+ hook --agent NAME/);
    expect(JSON.parse(readFileSync(join(home.env.OXAGEN_HOME!, "host.json"), "utf8")).harnesses).toEqual([]);
    expect(existsSync(settingsPath)).toBe(false);
  });

  it("starts the recorder (unless --no-start), which then answers on the hook port", async () => {
    const r = await run(TACHO, enrollArgs(), { env: home.env });
    try {
      expect(r.code, r.stderr).toBe(0);
      const recorder = JSON.parse(r.stdout).recorder as { pid: number; started: boolean };
      expect(recorder.started).toBe(true);
      const health = (await (await fetch(`http://127.0.0.1:${hooksPort}/healthz`)).json()) as { pid: number };
      expect(health.pid).toBe(recorder.pid);
      const again = JSON.parse((await run(TACHO, ["enroll", "--harness", "claude-code", "--json"], { env: home.env })).stdout);
      expect(again.recorder).toEqual({ pid: recorder.pid, started: false });
    } finally {
      await run(TACHO, ["daemon", "stop"], { env: home.env });
    }
  });

  it("an unknown harness or missing arguments are usage errors (exit 2)", async () => {
    expect((await tacho("enroll", "--server", stub.url, "--token", STUB_TOKEN, "--harness", "vim")).code).toBe(2);
    expect((await tacho("enroll", "--token", STUB_TOKEN)).code).toBe(2);
    expect((await tacho("enroll", "--harness", "claude-code")).code).toBe(2);
  });

  it("the written command hook runs and answers from the cached policy while the recorder is down", async () => {
    stub.policy = {
      ...stub.policy,
      tools: [{ id: "no-curl", tool: "Bash", command: "curl *", decision: "deny", reason: "no network from agents" }],
    };
    try {
      expect((await tacho(...enrollArgs())).code).toBe(0);
    } finally {
      stub.policy = { ...stub.policy, tools: [] };
    }
    const command = (settings().hooks.PreToolUse as Json[])[0]!.hooks[0].command as string;
    const payload = JSON.stringify({
      session_id: "abc123",
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_input: { command: "curl https://x" },
      tool_use_id: "toolu_1",
    });
    const stdout = execFileSync("sh", ["-c", command], { input: payload, env: childEnv(home.env), encoding: "utf8" });
    expect(JSON.parse(stdout).hookSpecificOutput).toEqual({
      hookEventName: "PreToolUse",
      permissionDecision: "deny",
      permissionDecisionReason: "no network from agents",
    });
  });
});

describe("tacho status and tacho reassign", () => {
  it("status reports hooks present, then altered, then missing", async () => {
    writeFileSync(settingsPath, USER_SETTINGS);
    expect((await tacho(...enrollArgs())).code).toBe(0);
    const status = async () => JSON.parse((await tacho("status", "--json")).stdout) as Json;
    let s = await status();
    expect(s).toMatchObject({ enrolled: true, workspace: STUB_WORKSPACE, spool: { events: 0, dropped: 0 } });
    expect(s.harnesses).toEqual([{ harness: "claude-code", config: settingsPath, hooks: "present" }]);
    expect(s.daemon).toMatchObject({ state: "stopped", answering: false, port: hooksPort });

    const edited = settings();
    edited.hooks.PostToolUse[0].hooks[0].timeout = 99;
    writeFileSync(settingsPath, JSON.stringify(edited));
    s = await status();
    expect(s.harnesses[0]).toMatchObject({ hooks: "altered", altered: ["PostToolUse"] });

    writeFileSync(settingsPath, USER_SETTINGS);
    s = await status();
    expect(s.harnesses[0].hooks).toBe("missing");
  });

  it("status on a computer that is not enrolled says so and exits 1", async () => {
    const r = await tacho("status", "--json");
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ enrolled: false });
  });

  it("reassign without --workspace drops a harness: only our entries go, every other entry is intact", async () => {
    writeFileSync(settingsPath, USER_SETTINGS);
    expect((await tacho(...enrollArgs())).code).toBe(0);
    const r = await tacho("reassign", "--harness", "none", "--json");
    expect(r.code).toBe(0);
    expect(settings()).toEqual(JSON.parse(USER_SETTINGS));
    expect(JSON.parse(readFileSync(join(home.env.OXAGEN_HOME!, "host.json"), "utf8")).harnesses).toEqual([]);
    // A later enroll without a harness does not bring it back; naming it again does.
    expect((await tacho("enroll", "--harness", "claude-code")).code).toBe(0);
    expect(withoutOurs(settings())).toEqual(JSON.parse(USER_SETTINGS));
  });

  it("reassign --workspace moves the host locally and keeps every harness", async () => {
    writeFileSync(settingsPath, USER_SETTINGS);
    expect((await tacho(...enrollArgs())).code).toBe(0);
    const before = readFileSync(settingsPath, "utf8");
    const r = await tacho("reassign", "--workspace", "ws_other", "--json");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ workspace: "ws_other", moved: true, harnesses: ["claude-code"] });
    expect(r.stderr).toMatch(/this computer only/);
    expect(readFileSync(settingsPath, "utf8")).toBe(before);
  });
});

describe("oxagen agent enroll", () => {
  it("enrolls with the one-time token and wraps no harness unless asked", async () => {
    const r = await run(OXAGEN, ["agent", "enroll", "--server", stub.url, "--token", STUB_TOKEN, "--no-start", "--json"], {
      env: home.env,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ workspace: STUB_WORKSPACE, harnesses: [] });
    expect(existsSync(settingsPath)).toBe(false);
    expect(JSON.parse(readFileSync(join(home.env.OXAGEN_HOME!, "host.json"), "utf8")).harnesses).toEqual([]);
  });
});
