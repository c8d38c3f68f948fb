// npm run demo — against the local server from the quickstart (`npm start` in another terminal):
// enrolls a throwaway computer, runs a scripted custom agent session through `tacho hook`, prints
// the run's frames, gaps, tier and grade, exports the bundle once the recorder has delivered all of
// it (frames, locks and bodies) and checks it with `oxagen verify`. It then stops its recorder,
// unenrolls the throwaway computer, deletes its state (its secret key among it) and puts the policy back; only
// the bundle and the server's public key stay, in a folder of their own.
//
// PORT (as for `npm start`: 8787 unless set), or OXAGEN_URL for another server, and OXAGEN_DEV_STATE (default .wrangler/oxagen-dev.json,
// written by `npm start`) say which server and which operator token.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { editablePolicy, runIdFor } from "../protocol/index.ts";
import { devUrl } from "./dev-setup.ts";

const ROOT = join(import.meta.dirname, "..");
const NODE = process.execPath;
const TACHO = join(ROOT, "collector/bin/tacho.js");
const OXAGEN = join(ROOT, "collector/bin/oxagen.js");
const url = devUrl();
const statePath = process.env.OXAGEN_DEV_STATE ?? join(ROOT, ".wrangler/oxagen-dev.json");
const say = (text: string) => process.stdout.write(`${text}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class DemoError extends Error {}

interface RunView {
  status: string;
  frame_count: number;
  lock_count: number;
  gaps: { kind: string; detail: string }[];
  tier: { value: string; reason: string };
  grade: { value: string; reason: string };
}

interface Policy {
  tools: { id: string }[];
  [field: string]: unknown;
}

/** Everything the demo leaves behind, undone in reverse order whatever happens. */
const cleanups: (() => void | Promise<void>)[] = [];

async function main(): Promise<number> {
  if (!existsSync(statePath)) throw new DemoError("no local Oxagen yet: run `npm start` in another terminal first");
  const { token, workspace } = JSON.parse(readFileSync(statePath, "utf8")) as { token: string; workspace: string };
  const api = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    });
    if (!res.ok) throw new DemoError(`${init.method ?? "GET"} ${path} answered ${res.status}: ${await res.text()}`);
    return res;
  };
  try {
    await fetch(`${url}/healthz`);
  } catch {
    throw new DemoError(`nothing answers at ${url}: run \`npm start\` in another terminal first`);
  }

  // The throwaway computer's state (host key, journal, bodies) is deleted at the end; the bundle is kept apart.
  const home = mkdtempSync(join(tmpdir(), "oxagen-demo-"));
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  const out = mkdtempSync(join(tmpdir(), "oxagen-demo-bundle-"));
  const [port, gatewayPort] = [await freePort(), await freePort()];
  const state = join(home, "state");
  const env = {
    ...process.env,
    OXAGEN_HOME: state,
    OXAGEN_LOCK_INTERVAL_MS: "1000",
    OXAGEN_SHIP_DELAY_MS: "100",
    OXAGEN_STATUS_INTERVAL_MS: "200",
  };
  // Not spawnSync: while the event loop is blocked, a kept-alive connection the server closes goes
  // unnoticed, and the next request on it fails with "other side closed".
  const run = (bin: string, args: string[], input?: string) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(NODE, [bin, ...args], { env });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
      child.on("error", reject);
      child.on("close", (status) => resolve({ status, stdout, stderr }));
      child.stdin.end(input ?? "");
    });

  // Before enrolling, so the policy the computer caches at enrollment already holds the clause.
  say("1. Adding a policy clause: refunds over $100 need a person …");
  const current = (await (await api(`/v1/workspaces/${workspace}/policy`)).json()) as { policy: Policy };
  const editable = editablePolicy(current.policy);
  const clause = {
    id: "demo-refunds",
    tool: "stripe_refund",
    command: "*amount=5000*",
    decision: "deny",
    reason: "refunds over $100 need a person",
  };
  const put = (tools: unknown[]) =>
    api(`/v1/workspaces/${workspace}/policy`, { method: "PUT", body: JSON.stringify({ ...editable, tools }) });
  await put([clause, ...current.policy.tools.filter((t) => t.id !== clause.id)]);
  cleanups.push(async () => void (await put(current.policy.tools)));

  say(`2. Enrolling a throwaway computer (its state in ${home}, deleted at the end) …`);
  const { token: enrollment } = (await (await api("/v1/enrollment-tokens", { method: "POST", body: "{}" })).json()) as { token: string };
  const enrollArgs = [
    "agent",
    "enroll",
    "--server",
    url,
    "--token",
    enrollment,
    "--hooks-port",
    String(port),
    "--gateway-port",
    String(gatewayPort),
  ];
  const enrolled = await run(OXAGEN, [...enrollArgs, "--json"]);
  if (enrolled.status !== 0) throw new DemoError(`oxagen agent enroll failed: ${enrolled.stderr}`);
  const hostId = (JSON.parse(enrolled.stdout) as { host_id: string }).host_id;

  say("3. Starting the recorder and running a custom agent's session through `tacho hook --agent stripe-refunds` …");
  const started = await run(TACHO, ["daemon", "start"]);
  if (started.status !== 0) throw new DemoError(`tacho daemon start failed: ${started.stderr}`);
  cleanups.push(async () => void (await run(TACHO, ["daemon", "stop"])));
  const session = `demo-${Date.now()}`;
  const hook = async (payload: Record<string, unknown>) => {
    const r = await run(TACHO, ["hook", "--agent", "stripe-refunds"], JSON.stringify({ session_id: session, ...payload }));
    const answer = JSON.parse(r.stdout) as { hookSpecificOutput?: { permissionDecision?: string } };
    say(`   ${String(payload.hook_event_name).padEnd(16)} → ${JSON.stringify(answer)}`);
    return answer;
  };
  await hook({ hook_event_name: "SessionStart", cwd: ROOT });
  await hook({ hook_event_name: "UserPromptSubmit", prompt: "refund the two duplicate charges on cus_123" });
  for (const [id, amount] of [
    ["call-1", 1200],
    ["call-2", 5000],
  ] as const) {
    const input = { command: `refund charge=ch_${id} amount=${amount}` };
    const answer = await hook({ hook_event_name: "PreToolUse", tool_name: "stripe_refund", tool_input: input, tool_use_id: id });
    if (answer.hookSpecificOutput?.permissionDecision === "deny") continue;
    await hook({
      hook_event_name: "PostToolUse",
      tool_name: "stripe_refund",
      tool_input: input,
      tool_use_id: id,
      tool_response: { exit_code: 0, refund: `re_${id}` },
    });
  }
  await hook({ hook_event_name: "Stop", last_assistant_message: "Refunded one charge; the other needs approval." });
  await hook({ hook_event_name: "SessionEnd", reason: "done" });
  // The recorder journals an event before it answers: a status written from now on counts the whole run.
  const ended = Date.now();

  say("4. Waiting for the recorder to deliver the whole run (frames, locks, bodies) …");
  const runId = runIdFor(hostId, "stripe-refunds", session);
  let view: RunView | null = null;
  for (let i = 0; ; i++) {
    const res = await fetch(`${url}/v1/runs/${runId}`, { headers: { authorization: `Bearer ${token}` } });
    if (res.ok) view = (await res.json()) as RunView;
    if (view?.status === "ended" && delivered(state, runId, ended)) break;
    if (i === 300) throw new DemoError(`the run was not delivered within a minute; see the recorder log in ${state}`);
    await sleep(200);
  }
  const bundle = await (await api(`/v1/runs/${runId}/export`)).text();
  writeFileSync(join(out, "bundle.jsonl"), bundle);

  const frames = (
    (await (await api(`/v1/runs/${runId}/frames?limit=1000`)).json()) as { frames: { seq: number; kind: string; payload: string }[] }
  ).frames;
  say(
    `\nRun ${runId}: ${view.status}, ${view.frame_count} frame${view.frame_count === 1 ? "" : "s"}, ${view.lock_count} lock${view.lock_count === 1 ? "" : "s"}`,
  );
  for (const f of frames) {
    const p = JSON.parse(f.payload) as Record<string, unknown>;
    const note = [p.tool_name, p.decision, p.reason, p.program, p.outcome].filter((x) => typeof x === "string").join(" · ");
    say(`  ${String(f.seq).padStart(3)}  ${f.kind.padEnd(16)} ${note}`);
  }
  say(`Gaps:  ${view.gaps.length ? view.gaps.map((g) => `${g.kind} (${g.detail})`).join("; ") : "none"}`);
  say(`Tier:  ${view.tier.value} — ${view.tier.reason}`);
  say(`Grade: ${view.grade.value} — ${view.grade.reason}`);

  say(`\n5. Exported ${join(out, "bundle.jsonl")}; checking it offline with the server's published key:`);
  const keys = (await (await fetch(`${url}/v1/keys`)).json()) as { keys: { pub: string }[] };
  writeFileSync(join(out, "server-key.pub"), `${keys.keys[0]!.pub}\n`);
  say(`$ oxagen verify ${join(out, "bundle.jsonl")} --server-key ${join(out, "server-key.pub")}`);
  const verified = await run(OXAGEN, ["verify", join(out, "bundle.jsonl"), "--server-key", join(out, "server-key.pub")]);
  process.stdout.write(verified.stdout);
  // Everything is delivered: the throwaway computer leaves the fleet (its runs stay on record).
  await run(TACHO, ["daemon", "stop"]);
  const gone = await run(TACHO, ["unenroll", "--json"]);
  if (gone.status !== 0) throw new DemoError(`tacho unenroll failed: ${gone.stderr}${gone.stdout}`);
  say(`\n6. Unenrolled the throwaway computer ${hostId}: its runs stay on record, it can no longer send anything.`);
  return verified.status ?? 1;
}

/**
 * Whether the recorder holds nothing more to deliver for the run: its status file, written after the
 * session ended, lists nothing pending for the chain (every frame, lock and body acknowledged).
 */
function delivered(state: string, runId: string, since: number): boolean {
  try {
    const status = JSON.parse(readFileSync(join(state, "recorder-status.json"), "utf8")) as {
      heartbeat_ms: number;
      chains: Record<string, unknown>;
    };
    return status.heartbeat_ms > since && !(runId in status.chains);
  } catch {
    return false;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

try {
  process.exitCode = await main();
} catch (err) {
  const cause = (err as Error).cause ? ` (${String((err as Error).cause)})` : "";
  process.stderr.write(`demo: ${err instanceof DemoError ? err.message : ((err as Error).stack ?? String(err))}${cause}\n`);
  process.exitCode = 1;
} finally {
  for (const undo of cleanups.reverse()) {
    try {
      await undo();
    } catch (err) {
      process.stderr.write(`demo: cleaning up: ${(err as Error).message}\n`);
    }
  }
}
