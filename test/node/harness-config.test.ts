// enroll / re-enroll / reassign / status for Codex, Cursor and Stella, against files that already
// hold other entries and settings (real `tacho` processes, temp HOME / CODEX_HOME).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseToml } from "smol-toml";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startStub, STUB_TOKEN, type StubServer } from "./support/stub-server.ts";
import { freePort, HOOK_PROGRAM, run, TACHO, tempHome } from "./support/tacho.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

let stub: StubServer;
let home: ReturnType<typeof tempHome>;
let env: Record<string, string>;
beforeAll(async () => {
  stub = await startStub();
});
afterAll(() => stub.close());
beforeEach(() => {
  home = tempHome();
  env = { ...home.env, CODEX_HOME: join(home.dir, "codex") };
});
afterEach(() => home.cleanup());

const tacho = (...args: string[]) => run(TACHO, args[0] === "enroll" ? [...args, "--no-start"] : args, { env });
async function enroll(harness: string) {
  const r = await tacho(
    "enroll",
    "--server",
    stub.url,
    "--token",
    STUB_TOKEN,
    "--harness",
    harness,
    "--hooks-port",
    String(await freePort()),
    "--json",
  );
  return r;
}
function put(path: string, text: string) {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
}
const ours = (h: Json, harness: string) =>
  new RegExp(`tacho(\\.js)? hook --harness ${harness}( >/dev/null)?$`).test(String(h.command ?? ""));

/** Grouped layout (Codex, Stella) with our handlers and the groups they leave empty taken out. */
function withoutOursGrouped(json: Json, harness: string): Json {
  const hooks: Json = {};
  for (const [event, groups] of Object.entries(json.hooks ?? {}) as [string, Json[]][]) {
    const kept = groups
      .map((g) => ({ ...g, hooks: (g.hooks as Json[]).filter((h) => !ours(h, harness)) }))
      .filter((g) => g.hooks.length > 0);
    if (kept.length) hooks[event] = kept;
  }
  return { ...json, hooks };
}

const CODEX_USER = `{
  "description": "team hooks",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "^Bash$",
        "hooks": [
          {
            "type": "command",
            "command": "python3 ~/.codex/guard.py",
            "timeout": 10,
            "statusMessage": "guard"
          }
        ]
      }
    ],
    "PreCompact": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "echo compact"
          }
        ]
      }
    ]
  }
}
`;

describe("Codex: hooks.json or config.toml", () => {
  it("merges into hooks.json, is idempotent, reassign restores the file byte for byte; status asks for the trust review", async () => {
    const path = join(env.CODEX_HOME!, "hooks.json");
    put(path, CODEX_USER);
    const r = await enroll("codex");
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).harnesses[0]).toMatchObject({
      harness: "codex",
      config: path,
      changed: true,
      action: expect.stringContaining("/hooks"),
    });
    const json = JSON.parse(readFileSync(path, "utf8")) as Json;
    expect(withoutOursGrouped(json, "codex")).toEqual(JSON.parse(CODEX_USER));
    expect(Object.keys(json.hooks)).toEqual(
      expect.arrayContaining([
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "SessionEnd",
      ]),
    );
    expect(json.hooks.PreToolUse[0].hooks[0].command).toBe("python3 ~/.codex/guard.py");
    expect(json.hooks.PreToolUse[1]).toEqual({
      hooks: [{ type: "command", command: `${HOOK_PROGRAM} hook --harness codex`, timeout: 30 }],
    });
    expect(json.hooks.SessionEnd[0].hooks[0].timeout).toBe(3);
    const written = readFileSync(path, "utf8");

    const st = await tacho("status", "--json", "--offline");
    const codex = (JSON.parse(st.stdout).harnesses as Json[])[0]!;
    expect(codex).toMatchObject({ harness: "codex", hooks: "present but not trusted" });
    expect(codex.problems).toEqual([
      { state: "not trusted", detail: expect.stringContaining("not trusted yet"), fix: expect.stringContaining("run /hooks") },
    ]);
    expect((await tacho("status", "--offline")).stdout).toContain("run /hooks");

    const again = await tacho("enroll", "--harness", "codex", "--json");
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).harnesses[0]).toMatchObject({ changed: false });
    expect(readFileSync(path, "utf8")).toBe(written);

    const rm = await tacho("reassign", "--harness", "none", "--json");
    expect(rm.code, rm.stderr).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(CODEX_USER);
  });

  it("writes a marked block into config.toml when the hooks live there; the rest of the file stays byte for byte", async () => {
    const toml = join(env.CODEX_HOME!, "config.toml");
    const user = `model = "o3"  # pinned
approval_policy = "on-request"

[hooks]
managed_dir = "/opt/hooks"

[[hooks.PreToolUse]]
matcher = "^Bash$"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "python3 guard.py"

[profiles.fast]
model = "o4-mini"
`;
    put(toml, user);
    const r = await enroll("codex");
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(env.CODEX_HOME!, "hooks.json"))).toBe(false);
    const text = readFileSync(toml, "utf8");
    expect(text.startsWith(user)).toBe(true);
    const parsed = parseToml(text) as Json;
    expect(parsed.profiles).toEqual({ fast: { model: "o4-mini" } });
    expect(parsed.hooks.managed_dir).toBe("/opt/hooks");
    expect(parsed.hooks.PreToolUse).toEqual([
      { matcher: "^Bash$", hooks: [{ type: "command", command: "python3 guard.py" }] },
      { hooks: [{ type: "command", command: `${HOOK_PROGRAM} hook --harness codex`, timeout: 30 }] },
    ]);
    const st = await tacho("status", "--json", "--offline");
    expect(JSON.parse(st.stdout).harnesses[0]).toMatchObject({ config: toml, hooks: "present but not trusted" });
    expect((await tacho("enroll", "--harness", "codex")).code).toBe(0);
    expect(readFileSync(toml, "utf8")).toBe(text);
    expect((await tacho("reassign", "--harness", "none")).code).toBe(0);
    expect(readFileSync(toml, "utf8")).toBe(user);
  });

  it("refuses a config.toml whose hooks our block would conflict with, and one that is not TOML; nothing is written", async () => {
    const toml = join(env.CODEX_HOME!, "config.toml");
    const conflict = `model = "o3"\nhooks = { PreToolUse = [] }\n`;
    put(toml, conflict);
    const r = await enroll("codex");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/already defines hooks in a way tacho's entries would conflict with/);
    expect(readFileSync(toml, "utf8")).toBe(conflict);
    expect(existsSync(join(home.env.OXAGEN_HOME!, "host.json"))).toBe(false);

    const broken = `model = "o3"\n[[hooks.PreToolUse]]\nmatcher = \n`;
    put(toml, broken);
    const b = await enroll("codex");
    expect(b.code).toBe(1);
    expect(b.stderr).toMatch(/config\.toml is not valid TOML \(line \d+/);
    expect(readFileSync(toml, "utf8")).toBe(broken);
  });
});

const CURSOR_USER = `{
  "version": 1,
  "hooks": {
    "beforeShellExecution": [
      {
        "command": "./hooks/guard.sh",
        "matcher": "curl|wget",
        "failClosed": true,
        "timeout": 30
      }
    ],
    "stop": [
      {
        "command": "./hooks/notify.sh",
        "loop_limit": 5
      }
    ]
  },
  "telemetry": false
}
`;

describe("Cursor: ~/.cursor/hooks.json", () => {
  it("adds flat camelCase handlers, failClosed at the veto points only; idempotent; reassign restores the file; no Claude hooks, no MCP", async () => {
    const path = join(home.dir, ".cursor", "hooks.json");
    put(path, CURSOR_USER);
    const r = await enroll("cursor");
    expect(r.code, r.stderr).toBe(0);
    const json = JSON.parse(readFileSync(path, "utf8")) as Json;
    expect(json.version).toBe(1);
    expect(json.telemetry).toBe(false);
    expect(json.hooks.beforeShellExecution).toEqual(JSON.parse(CURSOR_USER).hooks.beforeShellExecution);
    expect(json.hooks.stop[0]).toEqual({ command: "./hooks/notify.sh", loop_limit: 5 });
    const cmd = `${HOOK_PROGRAM} hook --harness cursor`;
    expect(json.hooks.stop[1]).toEqual({ command: cmd, failClosed: false });
    for (const e of ["beforeSubmitPrompt", "preToolUse", "subagentStart"])
      expect(json.hooks[e]).toEqual([{ command: cmd, failClosed: true }]);
    for (const e of ["sessionStart", "postToolUse", "postToolUseFailure", "subagentStop", "afterAgentResponse", "sessionEnd"])
      expect(json.hooks[e]).toEqual([{ command: cmd, failClosed: false }]);
    expect(Object.keys(json)).toEqual(["version", "hooks", "telemetry"]);
    expect(existsSync(join(home.dir, ".cursor", "mcp.json"))).toBe(false);
    expect(existsSync(join(env.CLAUDE_CONFIG_DIR!, "settings.json"))).toBe(false);

    const written = readFileSync(path, "utf8");
    expect((await tacho("enroll", "--harness", "cursor")).code).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(written);
    expect(JSON.parse((await tacho("status", "--json", "--offline")).stdout).harnesses[0]).toMatchObject({
      harness: "cursor",
      hooks: "present",
    });
    expect((await tacho("reassign", "--harness", "none")).code).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(CURSOR_USER);
  });

  it("creates the file with version 1; refuses another version and a file that is not JSON, untouched", async () => {
    const path = join(home.dir, ".cursor", "hooks.json");
    expect((await enroll("cursor")).code).toBe(0);
    expect(JSON.parse(readFileSync(path, "utf8")).version).toBe(1);
    const v2 = `{"version": 2, "hooks": {}}`;
    put(path, v2);
    const r = await tacho("enroll", "--harness", "cursor");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/"version" is 2/);
    expect(readFileSync(path, "utf8")).toBe(v2);
    put(path, "{ version: 1, ");
    const b = await tacho("enroll", "--harness", "cursor");
    expect(b.code).toBe(1);
    expect(b.stderr).toMatch(/hooks\.json is not valid JSON/);
    expect(readFileSync(path, "utf8")).toBe("{ version: 1, ");
  });
});

const STELLA_USER = `{
  "model": "claude-sonnet-4-5",
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "mcp__github__*",
        "hooks": [
          {
            "type": "command",
            "command": "./audit.sh",
            "timeoutMs": 2000
          }
        ]
      }
    ]
  }
}
`;

describe("Stella: ~/.stella/settings.json or stella.toml", () => {
  it("works with Stella not installed; merges settings.json with timeoutMs; idempotent; reassign restores the file", async () => {
    const r0 = await enroll("stella");
    expect(r0.code, r0.stderr).toBe(0);
    const path = join(home.dir, ".stella", "settings.json");
    expect(JSON.parse(readFileSync(path, "utf8")).hooks.PreToolUse).toEqual([
      { matcher: "*", hooks: [{ type: "command", command: `${HOOK_PROGRAM} hook --harness stella`, timeoutMs: 30000 }] },
    ]);
    put(path, STELLA_USER);
    expect((await tacho("enroll", "--harness", "stella")).code).toBe(0);
    const json = JSON.parse(readFileSync(path, "utf8")) as Json;
    expect(withoutOursGrouped(json, "stella")).toEqual(JSON.parse(STELLA_USER));
    expect(Object.keys(json.hooks).sort()).toEqual(["PostToolUse", "PreToolUse", "SessionStart", "Stop"]);
    expect(json.hooks.SessionStart).toEqual([
      { hooks: [{ type: "command", command: `${HOOK_PROGRAM} hook --harness stella >/dev/null`, timeoutMs: 30000 }] },
    ]);
    const written = readFileSync(path, "utf8");
    expect((await tacho("enroll", "--harness", "stella")).code).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(written);
    expect((await tacho("reassign", "--harness", "none")).code).toBe(0);
    expect(readFileSync(path, "utf8")).toBe(STELLA_USER);
  });

  it("edits stella.toml when it exists (it wins over settings.json), leaving settings.json alone", async () => {
    const dir = join(home.dir, ".stella");
    const json = join(dir, "settings.json");
    put(json, STELLA_USER);
    const toml = join(dir, "stella.toml");
    const user = `# my stella\nmodel = "claude-sonnet-4-5"\n\n[[hooks.PostToolUse]]\nmatcher = "*"\n[[hooks.PostToolUse.hooks]]\ncommand = "./audit.sh"\ntimeoutMs = 2000`;
    put(toml, user);
    const r = await enroll("stella");
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(json, "utf8")).toBe(STELLA_USER);
    const text = readFileSync(toml, "utf8");
    expect(text.startsWith(user)).toBe(true);
    const parsed = parseToml(text) as Json;
    expect(parsed.hooks.PostToolUse).toEqual([
      { matcher: "*", hooks: [{ command: "./audit.sh", timeoutMs: 2000 }] },
      { matcher: "*", hooks: [{ type: "command", command: `${HOOK_PROGRAM} hook --harness stella`, timeoutMs: 30000 }] },
    ]);
    expect(JSON.parse((await tacho("status", "--json", "--offline")).stdout).harnesses[0]).toMatchObject({
      config: toml,
      hooks: "present",
    });
    expect((await tacho("enroll", "--harness", "stella")).code).toBe(0);
    expect(readFileSync(toml, "utf8")).toBe(text);
    expect((await tacho("reassign", "--harness", "none")).code).toBe(0);
    // Byte for byte, the missing final newline too.
    expect(readFileSync(toml, "utf8")).toBe(user);
  });
});
