// npm run demo — against the local server from the quickstart (`npm start` in another terminal):
// enrolls a throwaway computer, runs a scripted custom agent session through `tacho hook`, prints
// the run's frames, gaps, tier and grade, exports the bundle and checks it with `oxagen verify`.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runIdFor } from "../protocol/index.ts";

const ROOT = join(import.meta.dirname, "..");
const NODE = process.execPath;
const TACHO = join(ROOT, "collector/bin/tacho.js");
const OXAGEN = join(ROOT, "collector/bin/oxagen.js");
const url = process.env.OXAGEN_URL ?? "http://127.0.0.1:8787";
const statePath = join(ROOT, ".wrangler/oxagen-dev.json");

function fail(message: string): never {
  process.stderr.write(`demo: ${message}\n`);
  process.exit(1);
}

if (!existsSync(statePath)) fail("no local Oxagen yet: run `npm start` in another terminal first");
const { token, workspace } = JSON.parse(readFileSync(statePath, "utf8")) as { token: string; workspace: string };
const api = async (path: string, init: RequestInit = {}) => {
  const res = await fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" } });
  if (!res.ok) fail(`${init.method ?? "GET"} ${path} answered ${res.status}: ${await res.text()}`);
  return res;
};
try {
  await fetch(`${url}/healthz`);
} catch {
  fail(`nothing answers at ${url}: run \`npm start\` in another terminal first`);
}

const home = mkdtempSync(join(tmpdir(), "oxagen-demo-"));
const port = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, "127.0.0.1", () => {
    const p = (s.address() as { port: number }).port;
    s.close(() => resolve(p));
  });
});
const env = { ...process.env, OXAGEN_HOME: join(home, "state"), OXAGEN_LOCK_INTERVAL_MS: "1000", OXAGEN_SHIP_DELAY_MS: "100" };
const run = (bin: string, args: string[], input?: string) => spawnSync(NODE, [bin, ...args], { env, input, encoding: "utf8" });
const say = (text: string) => process.stdout.write(`${text}\n`);

say(`1. Enrolling a throwaway computer (state in ${home}) …`);
const { token: enrollment } = (await (await api("/v1/enrollment-tokens", { method: "POST", body: "{}" })).json()) as { token: string };
const enrolled = run(OXAGEN, [
  "agent",
  "enroll",
  "--server",
  url,
  "--token",
  enrollment,
  "--hooks-port",
  String(port),
  "--gateway-port",
  String(port + 1),
  "--json",
]);
if (enrolled.status !== 0) fail(`oxagen agent enroll failed: ${enrolled.stderr}`);
const hostId = (JSON.parse(enrolled.stdout) as { host_id: string }).host_id;

say("2. Adding a policy clause: refunds over $100 need a person …");
const current = (await (await api(`/v1/workspaces/${workspace}/policy`)).json()) as {
  policy: Record<string, unknown> & { tools: { id: string }[] };
};
const { v: _v, workspace: _w, issued_ms: _i, paused_runs: _p, suspended_hosts: _s, ...editable } = current.policy;
const clause = {
  id: "demo-refunds",
  tool: "stripe_refund",
  command: "*amount=5000*",
  decision: "deny",
  reason: "refunds over $100 need a person",
};
const tools = [clause, ...current.policy.tools.filter((t) => t.id !== clause.id)];
await api(`/v1/workspaces/${workspace}/policy`, { method: "PUT", body: JSON.stringify({ ...editable, tools }) });
run(TACHO, ["enroll"]);

say("3. Starting the recorder and running a custom agent's session through `tacho hook --agent stripe-refunds` …");
const started = run(TACHO, ["daemon", "start"]);
if (started.status !== 0) fail(`tacho daemon start failed: ${started.stderr}`);
const session = `demo-${Date.now()}`;
const hook = (payload: Record<string, unknown>) => {
  const r = run(TACHO, ["hook", "--agent", "stripe-refunds"], JSON.stringify({ session_id: session, ...payload }));
  const answer = JSON.parse(r.stdout) as { hookSpecificOutput?: { permissionDecision?: string; permissionDecisionReason?: string } };
  say(`   ${String(payload.hook_event_name).padEnd(16)} → ${JSON.stringify(answer)}`);
  return answer;
};
hook({ hook_event_name: "SessionStart", cwd: ROOT });
hook({ hook_event_name: "UserPromptSubmit", prompt: "refund the two duplicate charges on cus_123" });
for (const [id, amount] of [
  ["call-1", 1200],
  ["call-2", 5000],
] as const) {
  const input = { command: `refund charge=ch_${id} amount=${amount}` };
  const answer = hook({ hook_event_name: "PreToolUse", tool_name: "stripe_refund", tool_input: input, tool_use_id: id });
  if (answer.hookSpecificOutput?.permissionDecision === "deny") continue;
  hook({
    hook_event_name: "PostToolUse",
    tool_name: "stripe_refund",
    tool_input: input,
    tool_use_id: id,
    tool_response: { exit_code: 0, refund: `re_${id}` },
  });
}
hook({ hook_event_name: "Stop", last_assistant_message: "Refunded one charge; the other needs approval." });
hook({ hook_event_name: "SessionEnd", reason: "done" });

say("4. Waiting for the recorder to deliver the run …");
const runId = runIdFor(hostId, "stripe-refunds", session);
interface RunView {
  status: string;
  frame_count: number;
  lock_count: number;
  gaps: { kind: string; detail: string }[];
  tier: { value: string; reason: string };
  grade: { value: string; reason: string };
}
let view = null as RunView | null;
for (let i = 0; i < 150; i++) {
  const res = await fetch(`${url}/v1/runs/${runId}`, { headers: { authorization: `Bearer ${token}` } });
  const exported = res.ok ? await fetch(`${url}/v1/runs/${runId}/export`, { headers: { authorization: `Bearer ${token}` } }) : null;
  if (res.ok) view = (await res.json()) as RunView;
  if (view && view.status === "ended" && exported?.ok) {
    const text = await exported.text();
    // Lock payloads sit in the manifest as JSON strings, so their quotes are escaped.
    if (text.includes('\\"final\\":true')) {
      writeFileSync(join(home, "bundle.json"), text);
      break;
    }
  }
  await new Promise((r) => setTimeout(r, 200));
}
run(TACHO, ["daemon", "stop"]);
if (!view || !existsSync(join(home, "bundle.json"))) fail("the run did not arrive in time; see the recorder log in the state folder");

const frames = (
  (await (await api(`/v1/runs/${runId}/frames?limit=1000`)).json()) as { frames: { seq: number; kind: string; payload: string }[] }
).frames;
say(`\nRun ${runId}: ${view.status}, ${view.frame_count} frames, ${view.lock_count} locks`);
for (const f of frames) {
  const p = JSON.parse(f.payload) as Record<string, unknown>;
  const note = [p.tool_name, p.decision, p.reason, p.program, p.outcome].filter((x) => typeof x === "string").join(" · ");
  say(`  ${String(f.seq).padStart(3)}  ${f.kind.padEnd(16)} ${note}`);
}
say(`Gaps:  ${view.gaps.length ? view.gaps.map((g) => `${g.kind} (${g.detail})`).join("; ") : "none"}`);
say(`Tier:  ${view.tier.value} — ${view.tier.reason}`);
say(`Grade: ${view.grade.value} — ${view.grade.reason}`);

say(`\n5. Exported ${join(home, "bundle.json")}; checking it offline with the server's published key:`);
const keys = (await (await fetch(`${url}/v1/keys`)).json()) as { keys: { pub: string }[] };
writeFileSync(join(home, "server-key.pub"), `${keys.keys[0]!.pub}\n`);
say(`$ oxagen verify ${join(home, "bundle.json")} --server-key ${join(home, "server-key.pub")}`);
const verified = spawnSync(NODE, [OXAGEN, "verify", join(home, "bundle.json"), "--server-key", join(home, "server-key.pub")], {
  encoding: "utf8",
});
process.stdout.write(verified.stdout);
process.exitCode = verified.status ?? 1;
