// npm run bench:policy — how long an operator's change takes to reach a hook answer, with 50
// simulated recorders connected to one workspace of the real Worker under `wrangler dev`.
//
// Each simulated recorder does what the recorder does: holds a host-signed push connection; on an
// announcement (an ETag other than its own, or "*"), takes the signed policy it carries, or without
// one fetches it (If-None-Match), verifies it under the pinned server key, decides a PreToolUse with the recorder's own decision
// function, and acknowledges the change. A change alternates pausing and resuming one agent across
// the workspace (every host's policy changes). The operator's call returns once every recorder
// acknowledged (docs/api.md, "Propagation"): its duration is the time for a change to reach all of
// them, and each recorder's decision must reflect the change when it returns. The floor, measured
// in the same run: one recorder fetching and verifying its policy on its own (what every push costs
// at the least, and what a poll costs).
import { performance } from "node:perf_hooks";
import { decideEvent } from "../../collector/recorder/decide.ts";
import {
  bytesToHex,
  openPolicy,
  type Policy,
  policyEtag,
  publicKeyOf,
  ROUTES,
  runIdFor,
  type SignedPolicy,
  signRequest,
} from "../../protocol/index.ts";
import { SERVER_SECRET } from "../../test/support/sample-run.ts";
import { startWorker } from "../../test/support/worker.ts";

const RECORDERS = Number(process.env.BENCH_RECORDERS ?? 50);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 100);
// A harness name: the workspace knows it without any run.
const AGENT = "claude-code";
const serverKey = publicKeyOf(SERVER_SECRET);

const worker = await startWorker();
const api = async (path: string, body: unknown = {}) => {
  const res = await worker.api(path, { method: "POST", body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, unknown>>;
};

interface Sim {
  id: string;
  secret: Uint8Array;
  etag: string | null;
  policy: Policy | null;
  /** Resolves when this recorder's decision says `paused`. */
  waiting: { paused: boolean; done: (ms: number) => void } | null;
  fetches: number;
}

function signed(sim: Sim, path: string, headers: Record<string, string> = {}) {
  return signRequest(sim.secret, {
    origin: worker.url,
    method: "GET",
    pathAndQuery: path,
    hostId: sim.id,
    headers,
    body: new Uint8Array(),
  });
}

/** The recorder's refresh: fetch with If-None-Match, verify, decide. Returns whether the agent is paused now. */
async function refresh(sim: Sim): Promise<void> {
  sim.fetches++;
  const headers: Record<string, string> = sim.etag ? { "if-none-match": `"${sim.etag}"` } : {};
  const res = await fetch(`${worker.url}${ROUTES.policy}`, { headers: { ...headers, ...signed(sim, ROUTES.policy, headers) } });
  if (res.status === 304) return check(sim);
  if (!res.ok) throw new Error(`policy fetch ${res.status}`);
  const body = (await res.json()) as SignedPolicy;
  sim.policy = openPolicy(body, serverKey);
  sim.etag = policyEtag(body);
  check(sim);
}

function pausedNow(sim: Sim): boolean {
  const event = { hook_event_name: "PreToolUse", tool_name: "refund", tool_input: {}, tool_use_id: "b" };
  const run = runIdFor(sim.id, AGENT, "bench-session");
  const v = decideEvent(event, run, { hostId: sim.id, policy: sim.policy && { policy: sim.policy, etag: sim.etag! }, agent: AGENT });
  return v?.rule === "paused_agent";
}

function check(sim: Sim): void {
  if (sim.waiting && pausedNow(sim) === sim.waiting.paused) {
    const w = sim.waiting;
    sim.waiting = null;
    w.done(performance.now());
  }
}

async function enrollSim(): Promise<Sim> {
  const et = (await api("/v1/enrollment-tokens")) as { token: string };
  const secret = crypto.getRandomValues(new Uint8Array(32));
  const res = await fetch(`${worker.url}/v1/enroll`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: et.token, public_key: bytesToHex(publicKeyOf(secret)), hostname: "bench", harnesses: [] }),
  });
  if (res.status !== 201) throw new Error(`enroll ${res.status} ${await res.text()}`);
  return { id: ((await res.json()) as { host_id: string }).host_id, secret, etag: null, policy: null, waiting: null, fetches: 0 };
}

async function connect(sim: Sim): Promise<void> {
  const url = `${worker.url.replace(/^http/, "ws")}${ROUTES.push}`;
  const ws = new WebSocket(url, { headers: signed(sim, ROUTES.push) } as unknown as string[]);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`push connection for ${sim.id} failed`));
  });
  ws.onmessage = (ev) => {
    const msg = JSON.parse(String(ev.data)) as { type: string; etag: string; change: string; policy?: SignedPolicy };
    if (msg.type !== "policy") return;
    const ack = () => ws.send(JSON.stringify({ type: "ack", change: msg.change, etag: sim.etag }));
    if (msg.etag !== "*" && msg.etag === sim.etag) return ack();
    // As the recorder does (collector/recorder/push.ts): the carried policy under a fetched one's checks, else a fetch.
    try {
      const policy = msg.policy ? openPolicy(msg.policy, serverKey) : null;
      if (policy && policy.host === sim.id && policy.issued_ms >= (sim.policy?.issued_ms ?? 0)) {
        sim.policy = policy;
        sim.etag = policyEtag(msg.policy!);
        check(sim);
        return ack();
      }
    } catch {
      // Refused: fetched instead.
    }
    void refresh(sim).then(ack);
  };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};
const row = (name: string, xs: number[]) =>
  `${name.padEnd(44)} ${pct(xs, 50).toFixed(1).padStart(8)} ${pct(xs, 95).toFixed(1).padStart(8)} ${Math.max(...xs)
    .toFixed(1)
    .padStart(8)} ${String(xs.length).padStart(7)}`;

try {
  const sims: Sim[] = [];
  for (let i = 0; i < RECORDERS; i++) sims.push(await enrollSim());
  await Promise.all(sims.map((s) => connect(s)));
  await Promise.all(sims.map((s) => refresh(s)));
  const latencies: number[] = [];
  const worst: number[] = [];
  const apiMs: number[] = [];
  const floor: number[] = [];
  let notApplied = 0;
  let staleAtReturn = 0;
  let paused = false;
  for (let i = 0; i < CHANGES; i++) {
    paused = !paused;
    const applied = sims.map(
      (s) =>
        new Promise<number>((done) => {
          s.waiting = { paused, done };
        }),
    );
    const t0 = performance.now();
    const answer = (await api(`/v1/agents/${AGENT}/${paused ? "pause" : "resume"}`)) as { propagation: { hosts: number; applied: number } };
    const returned = performance.now();
    apiMs.push(returned - t0);
    notApplied += answer.propagation.hosts - answer.propagation.applied;
    // A recorder whose decision does not reflect the change when the call returns breaks the contract.
    staleAtReturn += sims.filter((s) => s.waiting !== null && pausedNow(s) !== paused).length;
    for (const s of sims) check(s);
    const times = await Promise.race([
      Promise.all(applied),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`change ${i} not applied everywhere in 30 s`)), 30_000)),
    ]);
    const each = times.map((t) => t - t0);
    latencies.push(...each);
    worst.push(Math.max(...each));
    // The floor: one recorder's own fetch and verify (no push), measured between changes.
    const f0 = performance.now();
    sims[i % sims.length]!.etag = null;
    await refresh(sims[i % sims.length]!);
    floor.push(performance.now() - f0);
  }
  const fetches = sims.reduce((n, s) => n + s.fetches, 0);
  console.log(`bench:policy — ${RECORDERS} recorders on one workspace, ${CHANGES} changes (agent pause/resume across the workspace)\n`);
  console.log(`${"".padEnd(44)} ${"p50 ms".padStart(8)} ${"p95 ms".padStart(8)} ${"max ms".padStart(8)} ${"samples".padStart(7)}`);
  console.log(row("API call made → hook answer reflects it", latencies));
  console.log(row(`  the last of the ${RECORDERS} recorders, per change`, worst));
  console.log(row("operator API call (returns once all acked)", apiMs));
  console.log(row("floor: one recorder fetch + verify (no push)", floor));
  console.log(`\nat return: ${notApplied} recorders named not applied, ${staleAtReturn} deciding from the old policy (both must be 0)`);
  console.log(
    `p95 / floor p95: ${(pct(apiMs, 95) / pct(floor, 95)).toFixed(1)}x; goal p95 ≤ 2000 ms: ${pct(apiMs, 95) <= 2000 ? "met" : "NOT met"}`,
  );
  console.log(
    `RESULT ${JSON.stringify({ bench: "policy", recorders: RECORDERS, changes: CHANGES, api_p50_ms: pct(apiMs, 50), api_p95_ms: pct(apiMs, 95), floor_p95_ms: pct(floor, 95), not_applied: notApplied, stale_at_return: staleAtReturn })}`,
  );
  console.log(
    `policy fetches: ${fetches} (${(fetches / (RECORDERS * CHANGES)).toFixed(2)} per recorder per change, floor fetches included)`,
  );
} finally {
  await worker.stop();
}
