// Hook commands that provably run: enroll writes absolute commands it has run once (from a shell
// with an empty PATH) and refuses otherwise; status re-runs them and reports hooks that cannot
// run, are disabled, or are not trusted, with the fix, for every harness.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { trustHash } from "../../collector/harnesses/codex/trust.ts";
import { NODE } from "../support/recorder.ts";
import { startStub, STUB_TOKEN, type StubServer } from "./support/stub-server.ts";
import { freePort, HOOK_PROGRAM, run, TACHO, tempHome } from "./support/tacho.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

const ALL = ["claude-code", "codex", "cursor", "stella"];
let stub: StubServer;
let home: ReturnType<typeof tempHome>;
let env: Record<string, string>;
let port: number;
beforeAll(async () => {
  stub = await startStub();
});
afterAll(() => stub.close());
beforeEach(async () => {
  home = tempHome();
  env = { ...home.env, CODEX_HOME: join(home.dir, ".codex") };
  port = await freePort();
});
afterEach(() => home.cleanup());

const tacho = (args: string[], extra: Record<string, string> = {}) => run(TACHO, args, { env: { ...env, ...extra } });
const enroll = (harness: string, extra: Record<string, string> = {}) =>
  tacho(
    ["enroll", "--server", stub.url, "--token", STUB_TOKEN, "--harness", harness, "--hooks-port", String(port), "--no-start", "--json"],
    extra,
  );
const status = async () => JSON.parse((await tacho(["status", "--json", "--offline"])).stdout) as Json;
const configs = () => ({
  "claude-code": join(home.env.CLAUDE_CONFIG_DIR!, "settings.json"),
  codex: join(env.CODEX_HOME!, "hooks.json"),
  cursor: join(home.dir, ".cursor", "hooks.json"),
  stella: join(home.dir, ".stella", "settings.json"),
});
/** Every command handler tacho wrote into a harness's configuration. */
function commandsIn(harness: keyof ReturnType<typeof configs>): string[] {
  const hooks = JSON.parse(readFileSync(configs()[harness], "utf8")).hooks as Json;
  const handlers = Object.values(hooks).flatMap((list) =>
    harness === "cursor" ? (list as Json[]) : (list as Json[]).flatMap((g) => g.hooks as Json[]),
  );
  return handlers.filter((h) => typeof h.command === "string" && h.command.includes("hook --harness")).map((h) => h.command as string);
}

describe("tacho enroll writes hook commands that run", () => {
  it("every harness gets the absolute paths of this Node and this tacho, and each command answers from a shell with an empty PATH", async () => {
    const r = await enroll(ALL.join(","));
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).hook_command).toBe(HOOK_PROGRAM);
    for (const harness of ALL as (keyof ReturnType<typeof configs>)[]) {
      const commands = commandsIn(harness);
      expect(commands.length, harness).toBeGreaterThan(0);
      for (const c of commands) expect(c.startsWith(`${HOOK_PROGRAM} hook --harness ${harness}`), c).toBe(true);
    }
    const payload = JSON.stringify({ session_id: "s", hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command: "ls" } });
    const answer = execFileSync("/bin/sh", ["-c", commandsIn("claude-code")[0]!], {
      input: payload,
      env: { ...env, PATH: "" },
      encoding: "utf8",
    });
    expect(JSON.parse(answer)).toBeTypeOf("object");
    expect(JSON.parse(readFileSync(join(env.OXAGEN_HOME!, "host.json"), "utf8")).hook_command).toBe(HOOK_PROGRAM);
  });

  it("refuses, writing nothing and spending no token, when the command would not run from an empty PATH (a bare `node`)", async () => {
    writeFileSync(join(home.dir, "marker"), "");
    const before = stub.enrollCalls;
    const r = await enroll("claude-code,codex", { TACHO_HOOK_COMMAND: `node ${TACHO}` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/does not run from a shell with an empty PATH.*nothing was written/);
    expect(r.stderr).toContain(`node ${TACHO} hook`);
    expect(r.stderr).toMatch(/TACHO_HOOK_COMMAND is set/);
    expect(stub.enrollCalls).toBe(before);
    expect(existsSync(join(env.OXAGEN_HOME!, "host.json"))).toBe(false);
    expect(existsSync(configs()["claude-code"])).toBe(false);
    expect(existsSync(configs().codex)).toBe(false);
  });

  it("refuses a tacho that runs from npx's cache, which npm may delete", async () => {
    const r = await enroll("claude-code", {
      TACHO_HOOK_COMMAND: `${NODE} /home/u/.npm/_npx/1a2b/node_modules/oxagen-collector/bin/tacho.js`,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/npx's cache.*npm install -g/);
    expect(existsSync(configs()["claude-code"])).toBe(false);
  });
});

describe("tacho status re-runs the written commands", () => {
  it("reports hooks present but cannot run for every harness when the tacho they name is gone, with the fix", async () => {
    const bin = join(home.dir, "opt", "tacho");
    mkdirSync(join(bin, ".."), { recursive: true });
    writeFileSync(bin, `#!/bin/sh\nexec ${HOOK_PROGRAM} "$@"\n`);
    chmodSync(bin, 0o755);
    expect((await enroll(ALL.join(","), { TACHO_HOOK_COMMAND: bin })).code).toBe(0);
    let s = await status();
    for (const h of s.harnesses as Json[]) expect(h, h.harness).toMatchObject({ hooks: expect.stringMatching(/^present/) });
    expect((s.harnesses as Json[]).filter((h) => h.hooks === "present but cannot run")).toEqual([]);

    rmSync(bin);
    s = await status();
    expect((s.harnesses as Json[]).map((h) => [h.harness, h.hooks])).toEqual(ALL.map((h) => [h, "present but cannot run"]));
    for (const h of s.harnesses as Json[]) {
      expect(h.problems[0]).toMatchObject({
        state: "cannot run",
        detail: expect.stringContaining(bin),
        fix: expect.stringContaining("tacho enroll"),
      });
    }
    const text = (await tacho(["status", "--offline"])).stdout;
    expect(text).toContain("claude-code: hooks present but cannot run");
    expect(text).toContain("fix: run tacho enroll");
  });

  it("never runs a command that is not the plain form enroll writes (other shell syntax in it); reports it instead", async () => {
    expect((await enroll("claude-code")).code).toBe(0);
    const path = configs()["claude-code"];
    const marker = join(home.dir, "ran");
    const settings = JSON.parse(readFileSync(path, "utf8")) as Json;
    settings.hooks.Stop[0].hooks[0].command = `touch ${marker}; ${HOOK_PROGRAM} hook --harness claude-code`;
    writeFileSync(path, JSON.stringify(settings, null, 2));
    const claude = ((await status()).harnesses as Json[])[0]!;
    expect(claude.hooks).toBe("altered");
    expect(claude.problems).toContainEqual(
      expect.objectContaining({ state: "cannot run", detail: expect.stringContaining("was not run") }),
    );
    expect(existsSync(marker)).toBe(false);
  });

  it("Claude Code: disableAllHooks, or an allowedHttpHookUrls without our URL: present but disabled", async () => {
    expect((await enroll("claude-code")).code).toBe(0);
    const path = configs()["claude-code"];
    const written = JSON.parse(readFileSync(path, "utf8")) as Json;
    const claude = async () => ((await status()).harnesses as Json[])[0]!;
    expect(await claude()).toMatchObject({ hooks: "present" });

    writeFileSync(path, JSON.stringify({ ...written, disableAllHooks: true }, null, 2));
    expect(await claude()).toMatchObject({
      hooks: "present but disabled",
      problems: [{ state: "disabled", detail: expect.stringContaining('"disableAllHooks": true'), fix: expect.stringContaining("remove") }],
    });

    writeFileSync(path, JSON.stringify({ ...written, allowedHttpHookUrls: ["https://hooks.example.com/*"] }, null, 2));
    expect(await claude()).toMatchObject({
      hooks: "present but disabled",
      problems: [
        {
          detail: expect.stringContaining(`does not allow http://127.0.0.1:${port}/hooks/claude-code`),
          fix: expect.stringContaining(`http://127.0.0.1:${port}/*`),
        },
      ],
    });
    writeFileSync(
      path,
      JSON.stringify({ ...written, allowedHttpHookUrls: ["https://hooks.example.com/*", "http://127.0.0.1:*"] }, null, 2),
    );
    expect(await claude()).toMatchObject({ hooks: "present" });
  });

  it("Codex: [features] hooks = false, a hook turned off in /hooks, and hooks not (or no longer) trusted", async () => {
    const configToml = join(env.CODEX_HOME!, "config.toml");
    mkdirSync(env.CODEX_HOME!, { recursive: true });
    // `[features] hooks = true` is a switch, not hook definitions: the hooks still go to hooks.json.
    const user = `model = "o3"\n\n[features]\nhooks = true\n`;
    writeFileSync(configToml, user);
    const r = await enroll("codex");
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).harnesses[0]).toMatchObject({ config: configs().codex, problems: [{ state: "not trusted" }] });
    expect(readFileSync(configToml, "utf8")).toBe(user);

    const codex = async () => ((await status()).harnesses as Json[])[0]!;
    expect(await codex()).toMatchObject({
      hooks: "present but not trusted",
      problems: [{ state: "not trusted", fix: expect.stringContaining("/hooks") }],
    });

    // Trust them the way Codex's /hooks does: a trusted_hash per hook in config.toml.
    const path = configs().codex;
    const hooks = JSON.parse(readFileSync(path, "utf8")).hooks as Json;
    const state = (hash: (event: string, handler: Json) => string, extra = "") =>
      Object.entries(hooks)
        .map(([event, groups]) => {
          const label = event.replace(/(?<!^)([A-Z])/g, "_$1").toLowerCase();
          return `[hooks.state."${path}:${label}:0:0"]\ntrusted_hash = "${hash(event, (groups as Json[])[0]!.hooks[0])}"\n${extra}`;
        })
        .join("\n");
    writeFileSync(configToml, `${user}\n${state((e, h) => trustHash(e, undefined, h))}`);
    expect(await codex()).toMatchObject({ hooks: "present" });

    writeFileSync(configToml, `${user}\n${state(() => "sha256:00")}`);
    expect(await codex()).toMatchObject({
      hooks: "present but not trusted",
      problems: [{ detail: expect.stringContaining("changed since they were trusted") }],
    });

    writeFileSync(configToml, `${user}\n${state((e, h) => trustHash(e, undefined, h), "enabled = false\n")}`);
    expect(await codex()).toMatchObject({
      hooks: "present but disabled",
      problems: [{ state: "disabled", fix: expect.stringContaining("/hooks") }],
    });

    writeFileSync(configToml, `model = "o3"\n\n[features]\nhooks = false\n\n${state((e, h) => trustHash(e, undefined, h))}`);
    expect(await codex()).toMatchObject({
      hooks: "present but disabled",
      problems: [
        { state: "disabled", detail: expect.stringContaining("[features] hooks = false"), fix: expect.stringContaining("remove") },
      ],
    });
  });
});
