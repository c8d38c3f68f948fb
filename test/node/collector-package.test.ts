// The installable collector: `npm run build` → oxagen-collector-<version>.tgz, installed with
// `npm install -g`, run from outside the repo with nothing but Node.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { llmCallStep } from "../../collector/gateway/model/record.ts";
import { installCollector, type Installed } from "../support/package.ts";
import { ROOT } from "../support/recorder.ts";
import { oldNode } from "./support/old-node.ts";
import { startStub, STUB_TOKEN, type StubServer } from "./support/stub-server.ts";
import { collect, freePort, tempHome } from "./support/tacho.ts";

let pkg: Installed;
let stub: StubServer;
beforeAll(async () => {
  pkg = installCollector();
  stub = await startStub();
}, 180_000);
afterAll(() => stub?.close());

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

describe("the collector package", () => {
  it("is one archive with bins tacho and oxagen, plain JavaScript, and no dependency beyond Node 22.18", () => {
    expect(pkg.tgz).toMatch(/oxagen-collector-\d+\.\d+\.\d+\.tgz$/);
    const manifest = JSON.parse(readFileSync(join(pkg.dir, "package.json"), "utf8")) as Record<string, unknown>;
    expect(manifest).toMatchObject({
      name: "oxagen-collector",
      bin: { tacho: "bin/tacho.js", oxagen: "bin/oxagen.js" },
      engines: { node: ">=22.18" },
    });
    for (const key of ["dependencies", "optionalDependencies", "peerDependencies", "scripts"]) expect(manifest[key], key).toBeUndefined();
    expect(existsSync(join(pkg.dir, "node_modules"))).toBe(false);
    const all = files(pkg.dir);
    expect(all.filter((f) => f.endsWith(".ts"))).toEqual([]);
    // Nothing still names a TypeScript source (which Node will not load from node_modules).
    for (const f of all.filter((f) => /\.(?:c?js)$/.test(f))) expect(readFileSync(f, "utf8"), f).not.toMatch(/["'][^"'\s]+\.ts["']/);
    expect(statSync(pkg.tacho).mode & 0o111).not.toBe(0);
  });

  it("runs from outside the repo: --help, and oxagen verify on the sample bundle", async () => {
    const env = { PATH: process.env.PATH ?? "", HOME: tempHome().dir };
    const help = await collect(pkg.tacho, ["--help"], env);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^usage: tacho/);
    const v = spawnSync(
      pkg.oxagen,
      ["verify", "test/vectors/bundle.jsonl", "--server-key", "test/vectors/server-key.pub", "--bodies", "test/vectors/bodies", "--json"],
      { cwd: ROOT, env, encoding: "utf8" },
    );
    expect(v.status, v.stderr).toBe(0);
    expect(JSON.parse(v.stdout)).toMatchObject({ exit: 0, result: "valid", summary: { bodiesChecked: 6 } });
  });

  it("ships the gateway's body worker where the bundle looks for it; it makes the llm_call the source makes", async () => {
    const worker = join(pkg.dir, "dist", "gateway-worker.js");
    const js = files(join(pkg.dir, "dist")).filter((f) => f.endsWith(".js"));
    expect(js.filter((f) => readFileSync(f, "utf8").includes('new URL("./gateway-worker.js",import.meta.url)'))).toHaveLength(1);
    const call = {
      vendor: "anthropic",
      model: "claude-sonnet-4-5",
      stream: false,
      status: 200,
      latencyMs: 4,
      ttfbMs: 2,
      clientClosed: false,
      request: Buffer.from(JSON.stringify({ key: `sk-ant-api03-${"A".repeat(93)}`, messages: "x".repeat(20_000) })),
      response: Buffer.from('{"id":"msg_1"}'),
      seen: { id: "msg_1", model: "claude-sonnet-4-5", usage: { input_tokens: 1, output_tokens: 1 } },
    };
    const w = new Worker(worker);
    try {
      const answer = await new Promise<{ step?: { payload: unknown } }>((resolve, reject) => {
        w.once("message", resolve);
        w.once("error", reject);
        w.postMessage({ n: 1, call, retention: null });
      });
      expect(answer.step?.payload).toEqual(llmCallStep(call, null).payload);
    } finally {
      await w.terminate();
    }
  });

  it.skipIf(!oldNode())("on an unsupported Node: one line for a command, a fail-closed JSON answer for a hook", async () => {
    const node = oldNode()!.path;
    const status = await collect(node, [pkg.tacho, "status"], { PATH: "" });
    expect(status.code).toBe(2);
    expect(status.stderr.trimEnd()).toMatch(
      /^tacho needs Node\.js 22\.18 or later; this is Node\.js [\d.]+ \([^)]+\)\. Install Node\.js 22\.18\+ and run tacho with it\.$/,
    );
    const hook = await collect(
      node,
      [pkg.tacho, "hook", "--harness", "claude-code"],
      { PATH: "" },
      JSON.stringify({ hook_event_name: "PreToolUse", tool_name: "Bash" }),
    );
    expect(hook.code).toBe(0);
    expect(JSON.parse(hook.stdout).hookSpecificOutput).toMatchObject({
      permissionDecision: "deny",
      permissionDecisionReason: expect.stringContaining("Node.js 22.18"),
    });
  });

  it("enrolls from the installed tacho: the hooks run that tacho from a shell with an empty PATH, and the recorder it starts answers", async () => {
    const home = tempHome();
    const port = await freePort();
    const env = { ...home.env, PATH: process.env.PATH ?? "" };
    stub.policy = {
      ...stub.policy,
      tools: [{ id: "no-curl", tool: "Bash", command: "curl *", decision: "deny", reason: "no network from agents" }],
    };
    try {
      const r = await collect(
        pkg.tacho,
        ["enroll", "--server", stub.url, "--token", STUB_TOKEN, "--harness", "claude-code", "--hooks-port", String(port), "--json"],
        env,
      );
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { hook_command: string; recorder: { pid: number; started: boolean } };
      expect(out.hook_command).toBe(`${realpathSync(process.execPath)} ${join(pkg.dir, "bin", "tacho.js")}`);
      expect(out.recorder.started).toBe(true);
      const settings = JSON.parse(readFileSync(join(home.env.CLAUDE_CONFIG_DIR!, "settings.json"), "utf8"));
      const command = settings.hooks.PreToolUse[0].hooks[0].command as string;
      expect(command).toBe(`${out.hook_command} hook --harness claude-code`);

      // Stop the recorder: the hook then decides from the cached policy, through the package's offline path.
      expect((await collect(pkg.tacho, ["daemon", "stop"], env)).code).toBe(0);
      const payload = JSON.stringify({
        session_id: "s1",
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: "curl https://x" },
      });
      const answer = execFileSync("/bin/sh", ["-c", command], { input: payload, env: { ...home.env, PATH: "" }, encoding: "utf8" });
      expect(JSON.parse(answer).hookSpecificOutput).toMatchObject({
        permissionDecision: "deny",
        permissionDecisionReason: "no network from agents",
      });
      // A hook that found the recorder down starts it again (after its answer), from the package too.
      let up = false;
      for (let i = 0; i < 150 && !up; i++) {
        up = (await collect(pkg.tacho, ["daemon", "status"], env)).code === 0;
        if (!up) await new Promise((r) => setTimeout(r, 100));
      }
      expect(up).toBe(true);
    } finally {
      stub.policy = { ...stub.policy, tools: [] };
      await collect(pkg.tacho, ["daemon", "stop"], env);
      home.cleanup();
    }
  });
});
