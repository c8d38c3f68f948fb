// enroll --gateway points Claude Code (settings env.ANTHROPIC_BASE_URL) and Codex (a model provider)
// at the gateway, never Cursor; a setting of the user's own is refused, untouched; reassign
// --no-gateway (or dropping the harness) gives every file back byte for byte.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "smol-toml";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startStub, STUB_TOKEN, type StubServer } from "./support/stub-server.ts";
import { freePort, run, TACHO, tempHome } from "./support/tacho.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests walk parsed JSON
type Json = Record<string, any>;

let stub: StubServer;
let home: ReturnType<typeof tempHome>;
let env: Record<string, string>;
let gatewayPort: number;
beforeAll(async () => {
  stub = await startStub();
});
afterAll(() => stub.close());
beforeEach(async () => {
  home = tempHome();
  env = { ...home.env, CODEX_HOME: join(home.dir, ".codex") };
  gatewayPort = await freePort();
});
afterEach(() => home.cleanup());

const tacho = (...args: string[]) => run(TACHO, args, { env });
async function enroll(harness: string, ...more: string[]) {
  const args = ["enroll", "--no-start", "--harness", harness, ...more];
  if (!existsSync(join(env.OXAGEN_HOME!, "host.json")))
    args.push("--server", stub.url, "--token", STUB_TOKEN, "--hooks-port", String(await freePort()), "--gateway-port", String(gatewayPort));
  return tacho(...args);
}
function put(path: string, text: string) {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, text);
}

const CLAUDE = `{\n    "model": "opus",\n    "env": { "A": "1" }\n}`;
const CODEX = `model = "gpt-5"\napproval_policy = "never"\n\n[profiles.fast]\nmodel = "gpt-5-mini"\n`;

describe("enroll --gateway", () => {
  it("points Claude Code and Codex at the gateway, says why Cursor is not, and reassign --no-gateway gives both files back byte for byte", async () => {
    const claude = join(home.env.CLAUDE_CONFIG_DIR!, "settings.json");
    const codex = join(env.CODEX_HOME!, "config.toml");
    put(claude, CLAUDE);
    put(codex, CODEX);
    const r = await enroll("claude-code,codex,cursor", "--gateway");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`claude-code: model calls through the gateway (127.0.0.1:${gatewayPort})`);
    expect(r.stdout).toContain("cursor: model calls not through the gateway: Cursor's model calls go to Cursor's servers");
    const settings = JSON.parse(readFileSync(claude, "utf8")) as Json;
    const secret = (JSON.parse(readFileSync(join(env.OXAGEN_HOME!, "host.json"), "utf8")) as Json).hook_secret as string;
    expect(settings.env).toEqual({
      A: "1",
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${gatewayPort}`,
      ANTHROPIC_CUSTOM_HEADERS: `x-oxagen-hook-secret: ${secret}`,
    });
    expect(settings.model).toBe("opus");
    const toml = parse(readFileSync(codex, "utf8")) as Json;
    expect(toml.model_provider).toBe("oxagen-gateway");
    expect(toml.model_providers["oxagen-gateway"]).toEqual({
      name: "OpenAI through the Oxagen gateway",
      base_url: `http://127.0.0.1:${gatewayPort}/v1`,
      env_key: "OPENAI_API_KEY",
      wire_api: "responses",
      http_headers: { "x-oxagen-hook-secret": secret },
    });
    expect(toml.profiles).toEqual({ fast: { model: "gpt-5-mini" } });
    const host = JSON.parse(readFileSync(join(env.OXAGEN_HOME!, "host.json"), "utf8")) as Json;
    expect(host.gateway).toEqual(["claude-code", "codex"]);
    // A re-apply without --gateway keeps the routing and changes nothing.
    const before = [readFileSync(claude, "utf8"), readFileSync(codex, "utf8")];
    expect((await enroll("claude-code")).code).toBe(0);
    expect([readFileSync(claude, "utf8"), readFileSync(codex, "utf8")]).toEqual(before);
    const status = await tacho("status", "--offline", "--json");
    expect((JSON.parse(status.stdout) as Json).gateway).toMatchObject({
      port: gatewayPort,
      routed: [
        { harness: "claude-code", configured: true },
        { harness: "codex", configured: true },
      ],
    });
    const off = await tacho("reassign", "--no-gateway");
    expect(off.code, off.stderr).toBe(0);
    expect(readFileSync(codex, "utf8")).toBe(CODEX);
    // The hooks stay; only the gateway setting went.
    expect((JSON.parse(readFileSync(claude, "utf8")) as Json).env).toEqual({ A: "1" });
    expect((await tacho("reassign", "--harness", "none")).code).toBe(0);
    expect(readFileSync(claude, "utf8")).toBe(CLAUDE);
  });

  it("a harness dropped by reassign --harness stops going through the gateway; a config.toml the gateway setting created goes again", async () => {
    const r = await enroll("claude-code,codex", "--gateway");
    expect(r.code, r.stderr).toBe(0);
    const codex = join(env.CODEX_HOME!, "config.toml");
    expect(readFileSync(codex, "utf8")).toContain("oxagen-gateway");
    expect((await tacho("reassign", "--harness", "claude-code")).code).toBe(0);
    expect(existsSync(codex)).toBe(false);
    const settings = JSON.parse(readFileSync(join(home.env.CLAUDE_CONFIG_DIR!, "settings.json"), "utf8")) as Json;
    expect(settings.env.ANTHROPIC_BASE_URL).toBe(`http://127.0.0.1:${gatewayPort}`);
  });

  it("a base URL of the user's own in the settings becomes this computer's upstream, is said, kept across re-enrolls, shown by status and put back", async () => {
    const claude = join(home.env.CLAUDE_CONFIG_DIR!, "settings.json");
    const own = `{ "env": { "ANTHROPIC_BASE_URL": "https://llm-proxy.corp.example" } }\n`;
    put(claude, own);
    const r = await enroll("claude-code", "--gateway");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `anthropic: your base URL https://llm-proxy.corp.example (${claude} env.ANTHROPIC_BASE_URL) is now this computer's upstream: the gateway forwards those calls to it`,
    );
    expect((JSON.parse(readFileSync(claude, "utf8")) as Json).env.ANTHROPIC_BASE_URL).toBe(`http://127.0.0.1:${gatewayPort}`);
    const hostOf = () => JSON.parse(readFileSync(join(env.OXAGEN_HOME!, "host.json"), "utf8")) as Json;
    expect(hostOf().upstreams).toEqual({ anthropic: { url: "https://llm-proxy.corp.example", from: `${claude} env.ANTHROPIC_BASE_URL` } });
    // A re-enroll (the settings hold the gateway now) keeps it.
    expect((await enroll("claude-code", "--gateway")).code).toBe(0);
    expect(hostOf().upstreams.anthropic.url).toBe("https://llm-proxy.corp.example");
    const status = await tacho("status", "--offline");
    expect(status.stdout).toContain("anthropic calls go on to https://llm-proxy.corp.example (this computer's own upstream");
    expect((JSON.parse((await tacho("status", "--offline", "--json")).stdout) as Json).gateway.upstreams.anthropic.url).toBe(
      "https://llm-proxy.corp.example",
    );
    expect((await tacho("unenroll", "--force")).code).toBe(0);
    expect(readFileSync(claude, "utf8")).toBe(own);
  });

  it("--upstream sets one; the environment's base URL is taken when the settings have none; a bad one is refused, nothing written", async () => {
    const r = await run(
      TACHO,
      [
        "enroll",
        "--no-start",
        "--harness",
        "claude-code,codex",
        "--gateway",
        "--server",
        stub.url,
        "--token",
        STUB_TOKEN,
        "--gateway-port",
        String(gatewayPort),
        "--upstream",
        "openai=http://127.0.0.1:9/openai",
      ],
      {
        env: { ...env, ANTHROPIC_BASE_URL: "http://127.0.0.1:8/anthropic", OPENAI_BASE_URL: "http://ignored.example/v1" },
      },
    );
    expect(r.code, r.stderr).toBe(0);
    const host = JSON.parse(readFileSync(join(env.OXAGEN_HOME!, "host.json"), "utf8")) as Json;
    expect(host.upstreams).toEqual({
      anthropic: { url: "http://127.0.0.1:8/anthropic", from: "ANTHROPIC_BASE_URL in the environment tacho enroll ran in" },
      openai: { url: "http://127.0.0.1:9/openai", from: "--upstream" },
    });
    const bad = await tacho("enroll", "--no-start", "--harness", "claude-code", "--upstream", "anthropic=https://user:pw@proxy.example");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("which the gateway cannot forward to (an http or https URL with no credentials, query or fragment)");
    expect((await tacho("enroll", "--no-start", "--upstream", "mistral=https://x.example")).stderr).toContain(
      "--upstream takes VENDOR=URL",
    );
  });

  it("reassign --gateway: a base URL of the user's own in the settings becomes this computer's upstream too, said as enroll says it", async () => {
    const claude = join(home.env.CLAUDE_CONFIG_DIR!, "settings.json");
    expect((await enroll("claude-code")).code).toBe(0);
    const own = `{ "env": { "ANTHROPIC_BASE_URL": "https://llm-proxy.corp.example" } }\n`;
    put(
      claude,
      `${JSON.stringify({ ...JSON.parse(readFileSync(claude, "utf8")), env: { ANTHROPIC_BASE_URL: "https://llm-proxy.corp.example" } })}\n`,
    );
    const r = await tacho("reassign", "--gateway");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      `anthropic: your base URL https://llm-proxy.corp.example (${claude} env.ANTHROPIC_BASE_URL) is now this computer's upstream`,
    );
    const host = JSON.parse(readFileSync(join(env.OXAGEN_HOME!, "host.json"), "utf8")) as Json;
    expect(host.upstreams).toEqual({ anthropic: { url: "https://llm-proxy.corp.example", from: `${claude} env.ANTHROPIC_BASE_URL` } });
    expect((await tacho("reassign", "--no-gateway")).code).toBe(0);
    expect((JSON.parse(readFileSync(claude, "utf8")) as Json).env).toEqual(JSON.parse(own).env);
  });

  it("headers in the shell's ANTHROPIC_CUSTOM_HEADERS, which the settings' env (where the gateway's header goes) would hide from Claude Code: refused, naming them and the way forward, nothing written", async () => {
    const claude = join(home.env.CLAUDE_CONFIG_DIR!, "settings.json");
    const own = `{ "env": { "ANTHROPIC_CUSTOM_HEADERS": "x-team: blue" } }\n`;
    put(claude, own);
    const shell = { ...env, ANTHROPIC_CUSTOM_HEADERS: "x-team: blue\nX-Corp-Auth: s3cr3t-value" };
    const args = ["enroll", "--no-start", "--harness", "claude-code", "--gateway", "--server", stub.url, "--token", STUB_TOKEN];
    const r = await run(TACHO, [...args, "--gateway-port", String(gatewayPort)], { env: shell });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("ANTHROPIC_CUSTOM_HEADERS in the environment tacho enroll ran in has X-Corp-Auth");
    expect(r.stderr).toContain(`add those lines to env.ANTHROPIC_CUSTOM_HEADERS in ${claude}`);
    expect(r.stderr).not.toContain("s3cr3t-value");
    expect(readFileSync(claude, "utf8")).toBe(own);
    expect(existsSync(join(env.OXAGEN_HOME!, "host.json"))).toBe(false);
    // With every line in the settings, enroll goes ahead and keeps them before its own.
    put(claude, `{ "env": { "ANTHROPIC_CUSTOM_HEADERS": "x-team: blue\\nX-Corp-Auth: s3cr3t-value" } }\n`);
    const ok = await run(TACHO, [...args, "--gateway-port", String(gatewayPort)], { env: shell });
    expect(ok.code, ok.stderr).toBe(0);
    expect((JSON.parse(readFileSync(claude, "utf8")) as Json).env.ANTHROPIC_CUSTOM_HEADERS).toMatch(
      /^x-team: blue\nX-Corp-Auth: s3cr3t-value\nx-oxagen-hook-secret: /,
    );
  });

  it("a model provider of the user's own in Codex's config.toml is refused with the way forward, and nothing is written", async () => {
    const codex = join(env.CODEX_HOME!, "config.toml");
    const mine = `model_provider = "azure"\n`;
    put(codex, mine);
    const c = await enroll("codex", "--gateway");
    expect(c.code).toBe(1);
    expect(c.stderr).toContain('model_provider is "azure" already');
    expect(c.stderr).toContain("--upstream openai=");
    expect(readFileSync(codex, "utf8")).toBe(mine);
    expect(existsSync(join(env.OXAGEN_HOME!, "host.json"))).toBe(false);
  });
});

describe("enroll --gateway: the workspace's tools as the MCP server oxagen", () => {
  // Claude Code's user scope, as `claude mcp add --scope user` writes it (checked with 2.1.328): with
  // CLAUDE_CONFIG_DIR set, $CLAUDE_CONFIG_DIR/.claude.json. Its own state and another server are there.
  const CLAUDE_JSON = `{\n  "numStartups": 3,\n  "mcpServers": {\n    "github": { "type": "http", "url": "https://api.githubcopilot.com/mcp/" }\n  },\n  "projects": {}\n}`;

  it("adds it for Claude Code (user scope) and Codex, never Cursor; status shows it; --no-gateway and unenroll give both files back byte for byte", async () => {
    const claudeJson = join(home.env.CLAUDE_CONFIG_DIR!, ".claude.json");
    const codex = join(env.CODEX_HOME!, "config.toml");
    put(claudeJson, CLAUDE_JSON);
    put(codex, CODEX);
    const r = await enroll("claude-code,codex,cursor", "--gateway");
    expect(r.code, r.stderr).toBe(0);
    // The file of its own is named where the rest of enroll's changes are.
    expect(r.stdout).toContain(`claude-code: the workspace's tools as MCP server oxagen (set in ${claudeJson})`);
    const secret = (JSON.parse(readFileSync(join(env.OXAGEN_HOME!, "host.json"), "utf8")) as Json).hook_secret as string;
    const entry = { type: "http", url: `http://127.0.0.1:${gatewayPort}/mcp`, headers: { "x-oxagen-hook-secret": secret } };
    const json = JSON.parse(readFileSync(claudeJson, "utf8")) as Json;
    expect(json.mcpServers).toEqual({ github: { type: "http", url: "https://api.githubcopilot.com/mcp/" }, oxagen: entry });
    expect(json.numStartups).toBe(3);
    expect((parse(readFileSync(codex, "utf8")) as Json).mcp_servers).toEqual({
      oxagen: { url: `http://127.0.0.1:${gatewayPort}/mcp`, http_headers: { "x-oxagen-hook-secret": secret } },
    });
    expect(existsSync(join(home.dir, ".cursor", "mcp.json"))).toBe(false);
    const status = JSON.parse((await tacho("status", "--offline", "--json")).stdout) as Json;
    expect(status.gateway.mcp_servers).toEqual([
      { harness: "claude-code", present: true },
      { harness: "codex", present: true },
    ]);
    expect((await tacho("status", "--offline")).stdout).toContain(
      `workspace tools (MCP server oxagen at 127.0.0.1:${gatewayPort}/mcp) for claude-code, codex`,
    );
    const off = await tacho("reassign", "--no-gateway");
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toContain(`claude-code: MCP server oxagen removed from ${claudeJson}`);
    expect(readFileSync(claudeJson, "utf8")).toBe(CLAUDE_JSON);
    expect(readFileSync(codex, "utf8")).toBe(CODEX);
    // On again, then unenroll: the same bytes again.
    expect((await tacho("reassign", "--gateway")).code).toBe(0);
    expect(readFileSync(claudeJson, "utf8")).not.toBe(CLAUDE_JSON);
    const gone = await tacho("unenroll", "--force");
    expect(gone.code).toBe(0);
    expect(gone.stdout).toContain(`claude-code: MCP server oxagen removed from ${claudeJson}`);
    expect(readFileSync(claudeJson, "utf8")).toBe(CLAUDE_JSON);
  });

  it("a .claude.json without mcpServers gets one, and loses it again", async () => {
    const claudeJson = join(home.env.CLAUDE_CONFIG_DIR!, ".claude.json");
    const mine = `{"numStartups":1}`;
    put(claudeJson, mine);
    expect((await enroll("claude-code", "--gateway")).code).toBe(0);
    expect(Object.keys((JSON.parse(readFileSync(claudeJson, "utf8")) as Json).mcpServers)).toEqual(["oxagen"]);
    expect((await tacho("reassign", "--no-gateway")).code).toBe(0);
    expect(readFileSync(claudeJson, "utf8")).toBe(mine);
  });

  it.each(["claude-code", "codex"] as const)(
    "an MCP server named oxagen of the user's own (%s) is refused, nothing written",
    async (harness) => {
      const claudeJson = join(home.env.CLAUDE_CONFIG_DIR!, ".claude.json");
      const codex = join(env.CODEX_HOME!, "config.toml");
      const claudeMine = `{\n  "mcpServers": { "oxagen": { "type": "http", "url": "https://tools.example/mcp" } }\n}\n`;
      const codexMine = `${CODEX}\n[mcp_servers.oxagen]\nurl = "https://tools.example/mcp"\n`;
      put(claudeJson, claudeMine);
      put(codex, codexMine);
      const settings = join(home.env.CLAUDE_CONFIG_DIR!, "settings.json");
      put(settings, CLAUDE);
      const r = await enroll(harness, "--gateway");
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/named "oxagen" is there already|\[mcp_servers\.oxagen\] is there already/);
      expect(readFileSync(claudeJson, "utf8")).toBe(claudeMine);
      expect(readFileSync(codex, "utf8")).toBe(codexMine);
      expect(readFileSync(settings, "utf8")).toBe(CLAUDE);
      expect(existsSync(join(env.OXAGEN_HOME!, "host.json"))).toBe(false);
    },
  );
});

describe("enroll --gateway: Stella", () => {
  // Stella's user settings (macanderson/stella crates/stella-cli/src/settings.rs): a provider entry
  // whose id is a built-in overrides its defaults; base_url is where its calls go.
  const STELLA = `{\n  "providers": {\n    "zai": { "base_url": "https://api.z.ai/api/coding/paas/v4" },\n    "anthropic": { "default_model": "claude-sonnet-4-6" }\n  }\n}\n`;
  const stellaHome = () => join(home.dir, ".stella");

  it("points providers.anthropic and providers.openai at the gateway (the secret in the path), and --no-gateway gives the file back byte for byte", async () => {
    env.STELLA_HOME = stellaHome();
    const settings = join(stellaHome(), "settings.json");
    put(settings, STELLA);
    const r = await enroll("stella", "--gateway");
    expect(r.code, r.stderr).toBe(0);
    const secret = (JSON.parse(readFileSync(join(env.OXAGEN_HOME!, "host.json"), "utf8")) as Json).hook_secret as string;
    const json = JSON.parse(readFileSync(settings, "utf8")) as Json;
    const base = `http://127.0.0.1:${gatewayPort}/k/${secret}`;
    expect(json.providers).toEqual({
      zai: { base_url: "https://api.z.ai/api/coding/paas/v4" },
      anthropic: { default_model: "claude-sonnet-4-6", base_url: base },
      openai: { base_url: `${base}/v1` },
    });
    expect(json.hooks).toBeTruthy();
    expect((JSON.parse(readFileSync(join(env.OXAGEN_HOME!, "host.json"), "utf8")) as Json).gateway).toEqual(["stella"]);
    const off = await tacho("reassign", "--no-gateway");
    expect(off.code, off.stderr).toBe(0);
    expect((JSON.parse(readFileSync(settings, "utf8")) as Json).providers).toEqual(JSON.parse(STELLA).providers);
    expect((await tacho("reassign", "--harness", "none")).code).toBe(0);
    expect(readFileSync(settings, "utf8")).toBe(STELLA);
  });

  it("a base URL of the user's own for a provider the gateway carries is refused with the way forward, nothing written", async () => {
    env.STELLA_HOME = stellaHome();
    const settings = join(stellaHome(), "settings.json");
    const mine = `{ "providers": { "anthropic": { "base_url": "https://llm.corp.example" } } }`;
    put(settings, mine);
    const r = await enroll("stella", "--gateway");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("providers.anthropic.base_url is");
    expect(r.stderr).toContain("--upstream anthropic=");
    expect(readFileSync(settings, "utf8")).toBe(mine);
  });
});
