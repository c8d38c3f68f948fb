// npm run bench:hook — `tacho hook --agent` PreToolUse calls with the recorder up, against the floor
// `node -e 0` measured in the same run (alternating), plus the HTTP hook path's latency and the
// recorder's idle RSS.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import { makeHome, NODE, ROOT, sleep, TACHO } from "../../test/support/recorder.ts";

const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const home = await makeHome({ policy: {} });
const env = { ...process.env, OXAGEN_HOME: home.dir };
// The recorder as users run it: `tacho daemon start`, from the built bundle.
spawnSync(NODE, [`${ROOT}/scripts/build-collector.ts`], { stdio: "inherit" });
const started = spawnSync(NODE, [TACHO, "daemon", "start", "--json"], { env, encoding: "utf8" });
if (started.status !== 0) throw new Error(`tacho daemon start failed: ${started.stderr}`);
const daemonPid = (JSON.parse(started.stdout) as { pid: number }).pid;
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${daemonPid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
await sleep(6000);
const idleRss = rssMb();

function timed(args: string[], input?: string): number {
  const start = performance.now();
  const r = spawnSync(NODE, args, { env, input, encoding: "utf8" });
  const ms = performance.now() - start;
  if (r.status !== 0) throw new Error(`${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return ms;
}

const hookMs: number[] = [];
const floorMs: number[] = [];
for (let i = 0; i < CALLS; i++) {
  const payload = JSON.stringify({
    session_id: "bench-1",
    hook_event_name: "PreToolUse",
    tool_name: "run_shell",
    tool_input: { command: `echo ${i}` },
    tool_use_id: `call-${i}`,
  });
  floorMs.push(timed(["-e", "0"]));
  hookMs.push(timed([TACHO, "hook", "--agent", "bench"], payload));
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
function post(body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const req = request(
      {
        host: "127.0.0.1",
        port: home.port,
        path: "/hooks/claude-code",
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), "x-oxagen-hook-secret": home.secret },
      },
      (res) => {
        res.resume();
        res.on("end", () => (res.statusCode === 200 ? resolve(performance.now() - start) : reject(new Error(`HTTP ${res.statusCode}`))));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
const httpMs: number[] = [];
for (let i = 0; i < CALLS; i++) {
  httpMs.push(
    await post(
      JSON.stringify({
        session_id: "bench-http",
        hook_event_name: "PostToolUse",
        tool_name: "Bash",
        tool_input: { command: `echo ${i}` },
        tool_response: { stdout: `${i}`, exit_code: 0 },
        tool_use_id: `toolu_${i}`,
      }),
    ),
  );
}
agent.destroy();

await sleep(6000);
const busyRss = rssMb();
spawnSync(NODE, [TACHO, "daemon", "stop"], { env });

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const value = pct(hookMs, 0.5);
const floor = pct(floorMs, 0.5);
const rows = [
  [`tacho hook --agent, PreToolUse, recorder up (${CALLS} calls) p50 / p99 ms`, `${value.toFixed(1)} / ${pct(hookMs, 0.99).toFixed(1)}`],
  [`floor: node -e 0, alternating, p50 / p99 ms`, `${floor.toFixed(1)} / ${pct(floorMs, 0.99).toFixed(1)}`],
  ["ratio (p50 / floor p50)", (value / floor).toFixed(2)],
  [`HTTP hook POST /hooks/claude-code (keep-alive) p50 / p99 ms`, `${pct(httpMs, 0.5).toFixed(2)} / ${pct(httpMs, 0.99).toFixed(2)}`],
  ["recorder idle RSS (MB, 6 s after start)", idleRss.toFixed(1)],
  ["recorder RSS 6 s after the calls, holding their undelivered frames (MB)", busyRss.toFixed(1)],
];
const width = Math.max(...rows.map(([k]) => k!.length));
for (const [k, v] of rows) console.log(`${k!.padEnd(width)}  ${v}`);
console.log(
  `RESULT ${JSON.stringify({ name: "hook", value: Number(value.toFixed(2)), unit: "ms", floor: Number(floor.toFixed(2)), ratio: Number((value / floor).toFixed(3)) })}`,
);
