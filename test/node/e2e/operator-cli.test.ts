// The operator's command line end to end: the real `oxagen` commands against the real Worker under
// wrangler dev, with a fleet made by the real collector (a computer enrolled for a registered
// custom agent, its runs recorded through tacho hook); `oxagen login` by a code approved through
// the console's own forms, or by a pasted token.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runIdFor } from "../../../protocol/index.ts";
import { type Computer, daemonUp, drained, eventually, newComputer, OXAGEN, runDaemon, stopDaemon } from "../../support/e2e.ts";
import { freePort, NODE } from "../../support/recorder.ts";
import { type LocalWorker, startWorker } from "../../support/worker.ts";

let worker: LocalWorker;
let computer: Computer;
let daemon: ReturnType<typeof runDaemon> | undefined;
let hostId: string;
/** The operator's own machine: a HOME of its own, where oxagen login keeps its credentials. */
const operatorHome = mkdtempSync(join(tmpdir(), "oxagen-operator-"));
const operatorEnv = { ...process.env, HOME: operatorHome, DISPLAY: "", WAYLAND_DISPLAY: "" };
const CREDENTIALS = join(operatorHome, ".config/oxagen/operator.json");
const AGENT = "refunds";

function ox(args: string[], env: NodeJS.ProcessEnv = operatorEnv) {
  const r = spawnSync(NODE, [OXAGEN, ...args], { env, encoding: "utf8", timeout: 120_000, maxBuffer: 1 << 28 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
const json = <T>(r: { stdout: string }) => JSON.parse(r.stdout) as T;

/** Approves a device code through the console's own forms (sign in, look the code up, approve), over HTTP. */
async function approveInConsole(userCode: string, token: string, form: Record<string, string> = {}) {
  const jar = new Map<string, string>();
  const go = async (path: string, body?: Record<string, string>) => {
    const res = await fetch(`${worker.url}${path}`, {
      method: body ? "POST" : "GET",
      redirect: "manual",
      headers: {
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; "),
        ...(body ? { "content-type": "application/x-www-form-urlencoded", origin: worker.url } : {}),
      },
      body: body ? new URLSearchParams(body).toString() : undefined,
    });
    for (const c of res.headers.getSetCookie()) {
      const [name, value] = c.split(";")[0]!.split("=") as [string, string];
      if (value) jar.set(name, value);
      else jar.delete(name);
    }
    return { res, html: await res.text() };
  };
  const csrf = (html: string) => /name="csrf" value="([0-9a-f]+)"/.exec(html)![1]!;
  const signIn = await go("/console/sign-in");
  await go("/console/sign-in", { csrf: csrf(signIn.html), token });
  const page = await go(`/console/device?code=${userCode}`);
  const id = /action="\/console\/device\/([0-9a-f]{16})\/approve"/.exec(page.html)?.[1];
  if (!id) throw new Error(`no approve form on the device page:\n${page.html}`);
  const done = await go(`/console/device/${id}/approve`, { csrf: csrf(page.html), ...form });
  expect(done.res.headers.get("location")).toBe("/console/device?done=approved");
}

/** One custom-agent session through the real tacho hook: a prompt, a tool call, a turn. */
function session(id: string, end = true) {
  const who = ["--agent", AGENT];
  computer.hook(who, { session_id: id, hook_event_name: "SessionStart", cwd: computer.home });
  computer.hook(who, { session_id: id, hook_event_name: "UserPromptSubmit", prompt: `refund the duplicate charge (${id})` });
  const pre = {
    session_id: id,
    hook_event_name: "PreToolUse",
    tool_name: "stripe_refund",
    tool_input: { command: "refund ch_1" },
    tool_use_id: "t1",
  };
  const answer = computer.hook(who, pre);
  computer.hook(who, { ...pre, hook_event_name: "PostToolUse", tool_response: { exit_code: 0, refund: "re_1" } });
  computer.hook(who, { session_id: id, hook_event_name: "Stop", last_assistant_message: "Refunded." });
  if (end) computer.hook(who, { session_id: id, hook_event_name: "SessionEnd", reason: "done" });
  return answer;
}

interface AgentsAnswer {
  agents: { host_id: string; name: string; health: string }[];
  registered: { name: string; hosts: string[]; health: string | null }[];
}

beforeAll(async () => {
  worker = await startWorker();
  computer = await newComputer();
}, 240_000);

afterAll(async () => {
  daemon = await stopDaemon(daemon);
  await worker?.stop();
});

describe("oxagen login, and what needs it", () => {
  it("refuses every operator command before login with exit 4, and bad arguments with exit 2", () => {
    const r = ox(["runs"]);
    expect(r.status).toBe(4);
    expect(r.stderr).toContain("not signed in; run oxagen login --server URL");
    expect(ox(["run", "nope"]).status).toBe(2);
    expect(ox(["login"]).status).toBe(2);
    expect(ox(["login", "--server", worker.url, "--token", "oxe_not_an_operator_token"]).status).toBe(2);
  });

  it("with a pasted token: checks it, pins the server's keys with their fingerprint, stores 0600", async () => {
    const bad = ox(["login", "--server", worker.url, "--token", `oxo_${"0".repeat(16)}_${"0".repeat(48)}`]);
    expect(bad.status).toBe(4);
    expect(existsSync(CREDENTIALS)).toBe(false);
    const r = ox(["login", "--server", worker.url, "--token", worker.token]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`signed in to ${worker.url}: workspace ${worker.workspace}`);
    expect(r.stdout).toMatch(/[0-9a-f]{16} {2}ed25519 {2}SHA256:[A-Za-z0-9+/]{43} {2}its first signing key \(current\)/);
    expect(r.stdout).not.toContain("1970");
    expect(statSync(CREDENTIALS).mode & 0o777).toBe(0o600);
    expect(statSync(join(operatorHome, ".config/oxagen")).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(readFileSync(CREDENTIALS, "utf8")) as { keys: { pub: string }[]; minted: boolean };
    const served = (await (await fetch(`${worker.url}/v1/keys`)).json()) as { keys: { pub: string }[] };
    expect(stored.keys.map((k) => k.pub)).toEqual(served.keys.map((k) => k.pub));
    expect(stored.minted).toBe(false);
  });

  it("a server that cannot be reached is exit 5", async () => {
    const down = await freePort();
    expect(ox(["login", "--server", `http://127.0.0.1:${down}`, "--token", worker.token]).status).toBe(5);
  });
});

describe("a fleet made by the real collector, read and driven from the command line", () => {
  let runId: string;

  it("agents register: the token and exact command enroll the computer; the agent is idle, then healthy after its run", async () => {
    const registered = ox(["agents", "register", AGENT, "--json"]);
    expect(registered.status, registered.stderr).toBe(0);
    const { command } = json<{ command: string }>(registered);
    expect(command).toMatch(new RegExp(`^oxagen agent enroll --server ${worker.url} --token oxe_`));
    // The command as printed, on the computer that will run the agent (plus its test ports).
    const words = command.split(" ").slice(1);
    const enrolled = ox(
      [...words, "--no-start", "--hooks-port", String(computer.port), "--gateway-port", String(computer.gatewayPort), "--json"],
      computer.env,
    );
    expect(enrolled.status, enrolled.stderr).toBe(0);
    hostId = json<{ host_id: string }>(enrolled).host_id;
    const before = json<AgentsAnswer>(ox(["agents", "--json"]));
    expect(before.agents.find((a) => a.host_id === hostId && a.name === AGENT)).toMatchObject({ health: "idle" });
    expect(before.registered).toEqual([expect.objectContaining({ name: AGENT, hosts: [hostId] })]);
    const table = ox(["agents"]);
    expect(table.stdout.split("\n")[0]).toBe("COMPUTER\tAGENT\tKIND\tHEALTH\tWHY\tPAUSED");
    expect(table.stdout).toMatch(new RegExp(`\\t${AGENT}\\tcustom\\tidle\\twrapped, no runs yet\\tno`));

    daemon = runDaemon(computer);
    await daemonUp(computer);
    session("refund-1");
    runId = runIdFor(hostId, AGENT, "refund-1");
    await drained(computer);
    await eventually(async () => {
      const now = json<AgentsAnswer>(ox(["agents", "--json"]));
      return now.agents.find((a) => a.host_id === hostId && a.name === AGENT)?.health === "healthy";
    }, "the agent to be healthy");
  }, 180_000);

  it("runs: the API's filters, a table when piped, the answer with --json", async () => {
    await eventually(
      async () =>
        json<{ runs: { id: string; status: string }[] }>(ox(["runs", "--json"])).runs.find((r) => r.id === runId && r.status === "ended"),
      "the run to end",
    );
    const filtered = json<{ runs: { id: string }[] }>(
      ox(["runs", "--agent", AGENT, "--status", "ended", "--from", "2020-01-01", "--json"]),
    );
    expect(filtered.runs.map((r) => r.id)).toEqual([runId]);
    expect(json<{ runs: unknown[] }>(ox(["runs", "--status", "sealed", "--json"])).runs).toEqual([]);
    const piped = ox(["runs"]);
    const [header, row] = piped.stdout.trim().split("\n");
    expect(header).toBe("RUN\tSTATUS\tOUTCOME\tAGENT\tCOMPUTER\tTIER\tGRADE\tSPEND\tFRAMES\tLAST FRAME");
    expect(row!.split("\t").slice(0, 4)).toEqual([runId, "ended", "completed", AGENT]);
    expect(ox(["runs", "--status", "nope"]).status).toBe(6);
    expect(ox(["runs", "--from", "yesterday-ish"]).status).toBe(2);
  });

  it("run: status, outcome, tier and grade with reasons, gaps, spend, coverage statement", () => {
    const r = ox(["run", runId]);
    expect(r.status, r.stderr).toBe(0);
    for (const line of [
      /^status {3}ended$/m,
      /^outcome {2}completed: /m,
      /^tier {5}harness: /m,
      /^grade {4}\w+: /m,
      /^spend {4}\$/m,
      /^gaps {5}none$/m,
    ])
      expect(r.stdout).toMatch(line);
    expect(r.stdout).toContain("Coverage statement");
    expect(r.stdout).toContain("What no path saw:");
    const j = json<{ run: { id: string }; coverage: unknown }>(ox(["run", runId, "--json"]));
    expect(j.run.id).toBe(runId);
    expect(j.coverage).toBeTruthy();
    const unknown = ox(["run", `run_${"0".repeat(32)}`]);
    expect(unknown.status).toBe(6);
    expect(unknown.stderr).toContain("No such run");
  });

  it("export --verify --bodies: the bundle and every body it names, checked offline against the pinned keys", () => {
    const dir = mkdtempSync(join(tmpdir(), "oxagen-export-"));
    const file = join(dir, "bundle.jsonl");
    const bodies = join(dir, "bodies");
    const r = ox(["export", runId, "-o", file, "--verify", "--bodies", bodies]);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain(`exported ${runId} to ${file}`);
    expect(r.stdout).toContain("result: VALID (exit 0)");
    expect(r.stdout).toMatch(/bodies checked/);
    const names = readdirSync(bodies);
    expect(names.length).toBeGreaterThan(0);
    for (const n of names) expect(statSync(join(bodies, n)).mode & 0o777).toBe(0o600);
    // Again: the bodies are there already.
    const again = json<{ bodies: { downloaded: number; present: number }; verify: { exit: number } }>(
      ox(["export", runId, "-o", file, "--bodies", bodies, "--verify", "--json"]),
    );
    expect(again.bodies).toMatchObject({ downloaded: 0, present: names.length });
    expect(again.verify.exit).toBe(0);
    // Nothing on stderr when piped: no progress bar.
    expect(r.stderr).toBe("");
  });

  it("pause, resume and seal a live run; pause and resume an agent: the computer applies each before the answer", async () => {
    const live = "refund-2";
    session(live, false);
    const id = runIdFor(hostId, AGENT, live);
    await drained(computer);
    await eventually(async () => (await worker.api(`/v1/runs/${id}`)).status === 200, "the live run on the server");
    const paused = ox(["pause", id]);
    expect(paused.status, paused.stderr).toBe(0);
    expect(paused.stdout).toContain(`paused ${id}: applied on 1 of 1 computer`);
    const refused = computer.hook(["--agent", AGENT], {
      session_id: live,
      hook_event_name: "PreToolUse",
      tool_name: "stripe_refund",
      tool_input: { command: "x" },
      tool_use_id: "t9",
    });
    expect(refused.hookSpecificOutput).toMatchObject({ permissionDecision: "deny" });
    expect(ox(["resume", id]).stdout).toContain(`resumed ${id}: applied on 1 of 1 computer`);
    expect(json<{ paused: boolean }>(ox(["resume", id, "--json"])).paused).toBe(false);

    const agentPaused = ox(["agents", "pause", AGENT]);
    expect(agentPaused.stdout).toContain(`paused ${AGENT} across the workspace: applied on 1 of 1 computer`);
    const held = computer.hook(["--agent", AGENT], {
      session_id: live,
      hook_event_name: "PreToolUse",
      tool_name: "t",
      tool_input: {},
      tool_use_id: "t10",
    });
    expect(held.hookSpecificOutput).toMatchObject({ permissionDecision: "deny" });
    expect(ox(["agents", "resume", AGENT, "--host", hostId]).stdout).toContain("still paused: a workspace-wide pause applies");
    expect(ox(["agents", "resume", AGENT]).stdout).toContain(`resumed ${AGENT} across the workspace`);

    const sealed = ox(["seal", id, "--json"]);
    expect(sealed.status, sealed.stderr).toBe(0);
    expect(json<{ status: string; propagation: { applied: number } }>(sealed)).toMatchObject({
      status: "sealed",
      propagation: { applied: 1 },
    });
    expect(ox(["resume", id]).status).toBe(6);
  }, 120_000);

  it("computers and tokens list the workspace's computers and tokens, the command line's own marked", () => {
    const hosts = ox(["computers"]);
    expect(hosts.stdout.split("\n")[0]).toBe("COMPUTER\tHOST ID\tKEY ID\tSTATUS\tENROLLED\tLAST SEEN");
    expect(hosts.stdout).toContain(`\t${hostId}\t`);
    expect(json<{ hosts: { id: string }[] }>(ox(["computers", "--json"])).hosts.map((h) => h.id)).toContain(hostId);
    const tokens = ox(["tokens"]);
    const mine = tokens.stdout.split("\n").find((l) => l.startsWith("*\t"));
    expect(mine).toBeDefined();
    const enrollment = json<{ tokens: { used_by: string | null }[] }>(ox(["tokens", "--enrollment", "--json"]));
    expect(enrollment.tokens.map((t) => t.used_by)).toContain(hostId);
  });
});

/** `oxagen login --print --json` by a code approved through the console with `scope`; its JSON answer. */
async function loginByCode(scope: "admin" | "read") {
  const proc = spawn(NODE, [OXAGEN, "login", "--server", worker.url, "--print", "--json"], { env: operatorEnv });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on("exit", (c) => r(c)));
  const code = await eventually(async () => /code=([A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1], "the code on stderr");
  await approveInConsole(code, worker.token, { scope });
  expect(await exited, stderr).toBe(0);
  return JSON.parse(stdout) as { token_id: string; scope: string; minted: boolean };
}

const tokenRow = async (id: string) =>
  ((await (await worker.api("/v1/tokens")).json()) as { tokens: { id: string; revoked_ms: number | null }[] }).tokens.find(
    (t) => t.id === id,
  )!;

describe("oxagen login by a code approved in the console, and logout", () => {
  it("logout keeps a pasted token; a code approved as admin signs in, and logout revokes what it minted", async () => {
    expect(ox(["logout"]).stdout).toContain("is yours and stays valid");
    expect(existsSync(CREDENTIALS)).toBe(false);
    expect((await tokenRow(((await (await worker.api("/v1/tokens/current")).json()) as { id: string }).id)).revoked_ms).toBeNull();
    const login = await loginByCode("admin");
    expect(login).toMatchObject({ scope: "admin", minted: true });
    expect(ox(["runs"]).status).toBe(0);
    const out = ox(["logout"]);
    expect(out.stdout).toContain(`token ${login.token_id} revoked on the server`);
    expect(existsSync(CREDENTIALS)).toBe(false);
    expect((await tokenRow(login.token_id)).revoked_ms).not.toBeNull();
  }, 120_000);

  it("a code approved read-only signs in a token that reads but changes nothing", async () => {
    const login = await loginByCode("read");
    expect(login.scope).toBe("read");
    expect(ox(["computers"]).status).toBe(0);
    const refused = ox(["agents", "pause", AGENT]);
    expect(refused.status).toBe(6);
    expect(refused.stderr).toContain("insufficient_scope");
    // A read token may not revoke itself: logout says until when it stays valid, and still signs out here.
    const out = ox(["logout"]);
    expect(out.stdout).toContain("was not revoked");
    expect(existsSync(CREDENTIALS)).toBe(false);
  }, 120_000);
});
