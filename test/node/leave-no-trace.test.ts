// Enroll and leave without a trace: every setting enroll writes into a harness's configuration is
// noted with what was there before, and `tacho unenroll`, `reassign --harness none` and
// `reassign --no-gateway` give exactly that back, byte for byte, for each harness, with and without
// --gateway, with the user's own hooks, env and base URL there before and edits of theirs made after
// (which survive). A file or directory enroll created goes again.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startStub, STUB_TOKEN, type StubServer } from "./support/stub-server.ts";
import { freePort, run, TACHO, tempHome } from "./support/tacho.ts";

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
  env = { ...home.env, CODEX_HOME: join(home.dir, ".codex"), STELLA_HOME: join(home.dir, ".stella") };
});
afterEach(() => home.cleanup());

const tacho = (...args: string[]) => run(TACHO, args, { env });
async function enroll(...more: string[]) {
  const args = ["enroll", "--no-start", ...more];
  if (!existsSync(join(env.OXAGEN_HOME ?? join(home.dir, ".config", "oxagen", "tacho"), "host.json")))
    args.push(
      "--server",
      stub.url,
      "--token",
      STUB_TOKEN,
      "--hooks-port",
      String(await freePort()),
      "--gateway-port",
      String(await freePort()),
    );
  const r = await tacho(...args);
  expect(r.code, r.stderr).toBe(0);
  return r;
}
function put(path: string, text: string) {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
}
const text = (path: string) => readFileSync(path, "utf8");
/** Every file under the temporary HOME but the collector's own state. */
function filesIn(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() || d.isDirectory())
    .map((d) => join(d.parentPath, d.name))
    .filter((p) => !p.startsWith(env.OXAGEN_HOME!))
    .sort();
}

/** A user's own settings per harness: their own hooks, env and (Claude Code) base URL and headers. */
const OWN: Record<string, { path: () => string; text: string; edit: [string, string] }> = {
  "claude-code": {
    path: () => join(home.env.CLAUDE_CONFIG_DIR!, "settings.json"),
    text: `{\n    "model": "opus",\n    "env": {\n        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9\\/vendor",\n        "ANTHROPIC_CUSTOM_HEADERS": "x-team: blue",\n        "FOO": "1"\n    },\n    "hooks": {\n        "PreToolUse": [\n            { "matcher": "Bash", "hooks": [ { "type": "command", "command": "./guard.sh" } ] }\n        ]\n    }\n}`,
    edit: ['"model": "opus"', '"model": "sonnet"'],
  },
  codex: {
    path: () => join(env.CODEX_HOME!, "hooks.json"),
    text: `{\r\n\t"hooks": {\r\n\t\t"Stop": [ { "hooks": [ { "type": "command", "command": "say done" } ] } ]\r\n\t}\r\n}\r\n`,
    edit: ['"say done"', '"say finished"'],
  },
  cursor: {
    path: () => join(home.dir, ".cursor", "hooks.json"),
    text: `{\n  "hooks": {\n    "stop": [ { "command": "./notify.sh" } ]\n  }\n}\n`,
    edit: ['"./notify.sh"', '"./notify2.sh"'],
  },
  stella: {
    path: () => join(env.STELLA_HOME!, "settings.json"),
    text: `{ "theme": "dark", "hooks": { "Stop": [ { "hooks": [ { "type": "command", "command": "beep" } ] } ] } }`,
    edit: ['"dark"', '"light"'],
  },
};
const CODEX_TOML = `model = "gpt-5"\n# mine\n[profiles.fast]\nmodel = "gpt-5-mini"`;

describe("a user's own configuration comes back byte for byte", () => {
  for (const [harness, own] of Object.entries(OWN)) {
    for (const gateway of [false, true]) {
      const flags = gateway ? ["--gateway"] : [];
      it(`${harness}${gateway ? " --gateway" : ""}: unenroll gives the file back; an edit made after enroll survives`, async () => {
        put(own.path(), own.text);
        if (harness === "codex") put(join(env.CODEX_HOME!, "config.toml"), CODEX_TOML);
        const before = filesIn(home.dir);
        await enroll("--harness", harness, ...flags);
        expect(text(own.path())).not.toBe(own.text);
        // A second apply changes nothing.
        const applied = text(own.path());
        await enroll("--harness", harness, ...flags);
        expect(text(own.path())).toBe(applied);
        put(own.path(), text(own.path()).replace(...own.edit));
        const r = await tacho("unenroll", "--force");
        expect(r.code, r.stderr).toBe(0);
        expect(text(own.path())).toBe(own.text.replace(...own.edit));
        if (harness === "codex") expect(text(join(env.CODEX_HOME!, "config.toml"))).toBe(CODEX_TOML);
        expect(filesIn(home.dir)).toEqual(before);
      });

      it(`${harness}${gateway ? " --gateway" : ""}: reassign --harness none gives the file back exactly`, async () => {
        put(own.path(), own.text);
        await enroll("--harness", harness, ...flags);
        const r = await tacho("reassign", "--harness", "none");
        expect(r.code, r.stderr).toBe(0);
        expect(text(own.path())).toBe(own.text);
      });
    }

    it(`${harness}: with no configuration before, unenroll leaves no file or directory enroll created`, async () => {
      const before = filesIn(home.dir);
      await enroll("--harness", harness, "--gateway");
      expect(filesIn(home.dir).length).toBeGreaterThan(before.length);
      const r = await tacho("unenroll", "--force");
      expect(r.code, r.stderr).toBe(0);
      expect(filesIn(home.dir)).toEqual(before);
    });
  }

  it("every harness at once, --gateway then reassign --no-gateway: the hooks stay, the model settings are the user's again", async () => {
    for (const own of Object.values(OWN)) put(own.path(), own.text);
    await enroll("--harness", "claude-code,codex,cursor,stella", "--gateway");
    const claude = JSON.parse(text(OWN["claude-code"]!.path())) as Json;
    expect(claude.env.ANTHROPIC_BASE_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(claude.env.ANTHROPIC_CUSTOM_HEADERS).toMatch(/^x-team: blue\nx-oxagen-hook-secret: [0-9a-f]{64}$/);
    const off = await tacho("reassign", "--no-gateway");
    expect(off.code, off.stderr).toBe(0);
    const after = text(OWN["claude-code"]!.path());
    expect(after).toContain('"ANTHROPIC_BASE_URL": "http://127.0.0.1:9\\/vendor",\n        "ANTHROPIC_CUSTOM_HEADERS": "x-team: blue",');
    expect(JSON.parse(after).hooks.SessionStart).toHaveLength(1);
    expect(existsSync(join(env.CODEX_HOME!, "config.toml"))).toBe(false);
    expect((await tacho("unenroll", "--force")).code).toBe(0);
    for (const own of Object.values(OWN)) expect(text(own.path())).toBe(own.text);
  });

  it("a base URL the user set after enroll is theirs: --no-gateway leaves it", async () => {
    const path = OWN["claude-code"]!.path();
    put(path, `{\n  "env": {}\n}\n`);
    await enroll("--harness", "claude-code", "--gateway");
    const edited = text(path).replace(/http:\/\/127\.0\.0\.1:\d+/, "https://proxy.example");
    put(path, edited);
    expect((await tacho("reassign", "--no-gateway")).code).toBe(0);
    expect(JSON.parse(text(path)).env).toEqual({ ANTHROPIC_BASE_URL: "https://proxy.example" });
  });
});

describe("nothing of tacho's own is left", () => {
  it("the default state directory: unenroll takes away the ~/.config it made, and keeps one that was there", async () => {
    delete env.OXAGEN_HOME;
    const all = () => readdirSync(home.dir, { recursive: true }).map(String).sort();
    const before = all();
    await enroll("--harness", "claude-code");
    expect(existsSync(join(home.dir, ".config", "oxagen", "tacho", "host.json"))).toBe(true);
    expect((await tacho("unenroll", "--force")).code).toBe(0);
    expect(all()).toEqual(before);

    put(join(home.dir, ".config", "mine.conf"), "mine\n");
    const withConfig = all();
    await enroll("--harness", "claude-code");
    expect((await tacho("unenroll", "--force")).code).toBe(0);
    expect(all()).toEqual(withConfig);
  });
  it("unenroll while the recorder runs changes nothing and says the two steps that work", async () => {
    const settings = join(env.CLAUDE_CONFIG_DIR!, "settings.json");
    await enroll("--harness", "claude-code");
    const enrolled = text(settings);
    expect((await tacho("daemon", "start")).code).toBe(0);
    try {
      const r = await tacho("unenroll");
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/the recorder is running \(pid \d+\); stop it with tacho daemon stop, then run tacho unenroll again/);
      expect(text(settings)).toBe(enrolled);
      expect(existsSync(join(env.OXAGEN_HOME!, "host.json"))).toBe(true);
    } finally {
      expect((await tacho("daemon", "stop")).code).toBe(0);
    }
    expect((await tacho("unenroll", "--force")).code).toBe(0);
    expect(existsSync(settings)).toBe(false);
  });
  it("unenroll removes the login service and the state directory with everything the recorder kept in it (its log, its sources)", async () => {
    env.XDG_CONFIG_HOME = join(home.dir, "xdg");
    mkdirSync(join(env.XDG_CONFIG_HOME, "systemd", "user"), { recursive: true });
    // A systemctl that cannot reach a user manager, as on this machine, so no real service is ever loaded.
    put(join(home.dir, "bin", "systemctl"), "#!/bin/sh\necho 'Failed to connect to bus' >&2\nexit 1\n");
    chmodSync(join(home.dir, "bin", "systemctl"), 0o755);
    env.PATH = `${join(home.dir, "bin")}:${process.env.PATH}`;
    const all = () => readdirSync(home.dir, { recursive: true }).map(String).sort();
    const before = all();
    await enroll("--harness", "claude-code");
    // No systemd here: the file is written and stays for the next login (exit 1 says it could not be loaded).
    await tacho("daemon", "install");
    const unit = readdirSync(join(env.XDG_CONFIG_HOME, "systemd", "user"));
    expect(unit).toEqual([expect.stringMatching(/^oxagen-recorder-[0-9a-f]{8}\.service$/)]);
    expect((await tacho("daemon", "start")).code).toBe(0);
    expect((await tacho("daemon", "stop")).code).toBe(0);
    expect(existsSync(join(env.OXAGEN_HOME!, "recorder.log"))).toBe(true);
    const r = await tacho("unenroll", "--force", "--json");
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      state_dir: { path: env.OXAGEN_HOME, removed: true },
      service: { path: expect.stringContaining(unit[0]!) },
    });
    expect(all()).toEqual(before);
  });
});
