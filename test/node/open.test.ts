// tacho open: the console address comes from the enrollment; with no browser it is printed.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeHome } from "../support/recorder.ts";
import { childEnv, run, TACHO, type Ran } from "./support/tacho.ts";

const RUN_A = `run_${"a".repeat(32)}`;
const RUN_B = `run_${"b".repeat(32)}`;

function journalChain(home: string, chain: string, cwd: string, at: number) {
  const dir = join(home, "journal");
  mkdirSync(dir, { recursive: true });
  const frame = {
    seq: 0,
    t: 1,
    kind: "agent_start",
    payload: JSON.stringify({ path: "hook", harness: "claude-code", session_id: "s", cwd }),
  };
  const lines = [
    { k: "open", run: { harness: "claude-code", agent: null, session_id: "s" }, w: {} },
    { k: "ev", w: {}, frames: [frame] },
  ];
  const path = join(dir, `${chain}.jsonl`);
  writeFileSync(path, `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
  utimesSync(path, at / 1000, at / 1000);
}

function runIn(cwd: string, args: string[], env: Record<string, string>): Promise<Ran> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [TACHO, ...args], { cwd, env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", fail);
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

describe("tacho open", () => {
  it("prints the console address of the enrolled server when no browser can be opened", async () => {
    const home = await makeHome({ server: "http://127.0.0.1:8787" });
    const r = await run(TACHO, ["open"], { env: { OXAGEN_HOME: home.dir, DISPLAY: "", WAYLAND_DISPLAY: "" } });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("http://127.0.0.1:8787/console\n");
  });

  it("--run opens the most recent session started in this directory or below it, or the run named", async () => {
    const home = await makeHome({ server: "https://oxagen.example" });
    const project = mkdtempSync(join(tmpdir(), "oxagen-open-"));
    mkdirSync(join(project, "sub"));
    journalChain(home.dir, RUN_A, join(project, "sub"), Date.now() - 60_000);
    journalChain(home.dir, RUN_B, "/elsewhere", Date.now());
    const env = { OXAGEN_HOME: home.dir, DISPLAY: "", WAYLAND_DISPLAY: "" };
    const r = await runIn(project, ["open", "--run"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`https://oxagen.example/console/runs/${RUN_A}\n`);
    const named = await runIn(project, ["open", "--run", RUN_B, "--print"], env);
    expect(named.stdout).toBe(`https://oxagen.example/console/runs/${RUN_B}\n`);
    const none = await runIn(mkdtempSync(join(tmpdir(), "oxagen-none-")), ["open", "--run"], env);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no session recorded on this computer ran in");
    const bad = await runIn(project, ["open", "--run", "nope"], env);
    expect(bad.code).toBe(2);
  });

  it("--run says so when the session's start was compacted out of the journal, and points at this computer's runs", async () => {
    const home = await makeHome({ server: "https://oxagen.example" });
    const project = mkdtempSync(join(tmpdir(), "oxagen-open-"));
    journalChain(home.dir, RUN_B, "/elsewhere", Date.now());
    // What the recorder leaves once a chain's frames were acknowledged: one snapshot line, no agent_start.
    const snap = { k: "snap", run: { harness: "claude-code", agent: null, session_id: "s" }, w: {}, stored: 9, frames: [], locks: [] };
    writeFileSync(join(home.dir, "journal", `${RUN_A}.jsonl`), `${JSON.stringify(snap)}\n`);
    const r = await runIn(project, ["open", "--run"], { OXAGEN_HOME: home.dir, DISPLAY: "", WAYLAND_DISPLAY: "" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no session whose start is still in this computer's journal ran in ${project}`);
    expect(r.stderr).toContain("1 older session's start was shipped and compacted away");
    expect(r.stderr).toMatch(/find it among this computer's runs: https:\/\/oxagen\.example\/console\/runs\?host=[\w-]+\n/);
  });

  it("says so when this computer is not enrolled", async () => {
    const r = await run(TACHO, ["open"], { env: { OXAGEN_HOME: mkdtempSync(join(tmpdir(), "oxagen-open-")) } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("not enrolled");
  });
});
