// `tacho daemon install` / `uninstall`: the login service's file, its path, and the commands that
// load it. systemd is not running here, so a stand-in `systemctl` on PATH logs each call and, for
// `enable --now`, starts the unit's ExecStart line as systemd would (proving the unit runs).
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { launchdAgent, systemdUnit } from "../../collector/commands/daemon/service.ts";
import { makeHome, type Home } from "../support/recorder.ts";
import { HOOK_PROGRAM, run, TACHO, tempHome } from "./support/tacho.ts";

// Parses the unit well enough to run it: ExecStart (systemd quoting) and Environment lines.
const FAKE_SYSTEMCTL = (log: string, fail: boolean) => `#!${process.execPath}
const { appendFileSync, readFileSync } = require("node:fs");
const { spawn } = require("node:child_process");
const { join } = require("node:path");
const args = process.argv.slice(2);
appendFileSync(${JSON.stringify(log)}, JSON.stringify(args) + "\\n");
if (${fail}) { process.stderr.write("Failed to connect to bus: No medium found\\n"); process.exit(1); }
const unitDir = join(process.env.XDG_CONFIG_HOME || join(process.env.HOME, ".config"), "systemd", "user");
const words = (s) => [...s.matchAll(/"((?:[^"\\\\]|\\\\.)*)"|(\\S+)/g)].map((m) => m[1] !== undefined ? m[1].replace(/\\\\(.)/g, "$1") : m[2]).map((w) => w.replaceAll("%%", "%"));
if (args[1] === "enable" && args[2] === "--now") {
  const unit = readFileSync(join(unitDir, args[3]), "utf8");
  const [cmd, ...rest] = words(unit.match(/^ExecStart=(.*)$/m)[1]);
  const env = {};
  for (const m of unit.matchAll(/^Environment=(.*)$/gm)) { const [kv] = words(m[1]); const i = kv.indexOf("="); env[kv.slice(0, i)] = kv.slice(i + 1); }
  spawn(cmd, rest, { detached: true, stdio: "ignore", env: { HOME: process.env.HOME, PATH: "", ...env } }).unref();
}
if (args[1] === "disable" && args[2] === "--now") {
  const unit = readFileSync(join(unitDir, args[3]), "utf8");
  const [kv] = words(unit.match(/^Environment=(.*)$/m)[1]);
  try { process.kill(Number(readFileSync(join(kv.slice(kv.indexOf("=") + 1), "recorder.pid"), "utf8")), "SIGTERM"); } catch {}
}
`;

let user: ReturnType<typeof tempHome>;
let home: Home;
let env: Record<string, string>;
let log: string;
beforeEach(async () => {
  user = tempHome();
  home = await makeHome();
  log = join(user.dir, "systemctl.log");
  const bin = join(user.dir, "fakebin");
  mkdirSync(bin);
  env = { HOME: user.dir, OXAGEN_HOME: home.dir, PATH: `${bin}:${process.env.PATH}` };
});
afterEach(async () => {
  await run(TACHO, ["daemon", "stop"], { env });
  user.cleanup();
});
function fakeSystemctl(fail = false) {
  const path = join(user.dir, "fakebin", "systemctl");
  writeFileSync(path, FAKE_SYSTEMCTL(log, fail));
  chmodSync(path, 0o755);
}
const calls = () =>
  existsSync(log)
    ? readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as string[])
    : [];

describe.skipIf(process.platform !== "linux")("tacho daemon install on Linux: a systemd user unit", () => {
  it("writes the unit (this Node, this tacho, this state dir), enables and starts it; the recorder answers; uninstall stops and removes it", async () => {
    fakeSystemctl();
    const r = await run(TACHO, ["daemon", "install", "--json"], { env });
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { service: string; path: string };
    expect(out.service).toMatch(/^oxagen-recorder-[0-9a-f]{8}\.service$/);
    expect(out.path).toBe(join(user.dir, ".config", "systemd", "user", out.service));
    const unit = readFileSync(out.path, "utf8");
    const [node, tacho] = HOOK_PROGRAM.split(" ");
    expect(unit).toContain(`ExecStart=${node} --max-semi-space-size=16 `);
    expect(unit).toMatch(/ --max-semi-space-size=16 \S+(?:tacho\.js|tacho\.mjs) daemon run\n/);
    expect(unit.includes(tacho!) || unit.includes("dist/tacho.mjs")).toBe(true);
    expect(unit).toContain(`Environment=OXAGEN_HOME=${home.dir}\n`);
    expect(unit).toContain("Restart=on-failure\n");
    expect(unit).toContain("[Install]\nWantedBy=default.target\n");
    expect(calls()).toEqual([
      ["--user", "daemon-reload"],
      ["--user", "enable", "--now", out.service],
    ]);
    const health = await fetch(`http://127.0.0.1:${home.port}/healthz`);
    expect(health.ok).toBe(true);
    const status = JSON.parse((await run(TACHO, ["status", "--json", "--offline"], { env })).stdout);
    expect(status.service).toMatchObject({ kind: "systemd", name: out.service, installed: true });
    expect(status.daemon.state).toBe("running");

    const u = await run(TACHO, ["daemon", "uninstall", "--json"], { env });
    expect(u.code, u.stderr).toBe(0);
    expect(JSON.parse(u.stdout)).toMatchObject({ removed: true, path: out.path });
    expect(existsSync(out.path)).toBe(false);
    expect(calls().slice(2)).toEqual([
      ["--user", "disable", "--now", out.service],
      ["--user", "daemon-reload"],
    ]);
    const again = await run(TACHO, ["daemon", "uninstall"], { env });
    expect(again.stdout).toContain("no login service is installed");
  });

  it("where systemd does not run for the user: says so, keeps the unit for the next login, keeps the recorder running, exits 1", async () => {
    fakeSystemctl(true);
    expect((await run(TACHO, ["daemon", "start"], { env })).code).toBe(0);
    const r = await run(TACHO, ["daemon", "install"], { env });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /wrote .*oxagen-recorder-[0-9a-f]{8}\.service, but loading it failed \(systemctl --user daemon-reload: Failed to connect to bus/,
    );
    expect(r.stderr).toMatch(/Until then the recorder runs as before \(pid \d+\)/);
    expect((await fetch(`http://127.0.0.1:${home.port}/healthz`)).ok).toBe(true);
  });

  it("the default state directory gets the plain name, under XDG_CONFIG_HOME when set", () => {
    const launch = {
      argv: ["/opt/node 22/bin/node", "--max-semi-space-size=16", "/opt/tacho/bin/tacho.js", "daemon", "run"],
      env: { OXAGEN_HOME: "/h/%u" },
      log: "/h/log",
    };
    const saved = { OXAGEN_HOME: process.env.OXAGEN_HOME, HOME: process.env.HOME };
    try {
      delete process.env.OXAGEN_HOME;
      const unit = systemdUnit(launch, "/x/config");
      expect(unit.name).toBe("oxagen-recorder.service");
      expect(unit.path).toBe("/x/config/systemd/user/oxagen-recorder.service");
      // systemd quoting: a path with a space is quoted, % doubled.
      expect(unit.text).toContain('ExecStart="/opt/node 22/bin/node" --max-semi-space-size=16 /opt/tacho/bin/tacho.js daemon run\n');
      expect(unit.text).toContain(`Environment="OXAGEN_HOME=/h/%%u"\n`);
    } finally {
      if (saved.OXAGEN_HOME !== undefined) process.env.OXAGEN_HOME = saved.OXAGEN_HOME;
    }
  });
});

describe("the launchd agent (macOS)", () => {
  it("runs the recorder at load, restarts it when it fails, logs to the state dir; XML-escaped", () => {
    const agent = launchdAgent(
      {
        argv: ["/usr/local/bin/node", "/Users/a&b/tacho.js", "daemon", "run"],
        env: { OXAGEN_HOME: "/Users/a&b/state" },
        log: "/Users/a&b/state/recorder.log",
      },
      "/Users/ab",
    );
    expect(agent.path).toMatch(/^\/Users\/ab\/Library\/LaunchAgents\/ai\.oxagen\.recorder(\.[0-9a-f]{8})?\.plist$/);
    expect(agent.text).toContain(`<key>Label</key>\n  <string>${agent.name}</string>`);
    expect(agent.text).toContain(
      "<key>ProgramArguments</key>\n  <array>\n    <string>/usr/local/bin/node</string>\n    <string>/Users/a&amp;b/tacho.js</string>\n    <string>daemon</string>\n    <string>run</string>\n  </array>",
    );
    expect(agent.text).toContain("<key>OXAGEN_HOME</key>\n    <string>/Users/a&amp;b/state</string>");
    expect(agent.text).toContain("<key>RunAtLoad</key>\n  <true/>");
    expect(agent.text).toContain("<key>SuccessfulExit</key>\n    <false/>");
    expect(agent.text).toContain("<key>StandardErrorPath</key>\n  <string>/Users/a&amp;b/state/recorder.log</string>");
  });
});
