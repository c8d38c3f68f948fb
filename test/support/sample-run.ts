// A deterministic sample run signed with the RFC 8032 section 7.1 test keys: the source of the
// known-answer vectors in test/vectors/ and of the tamper corpus. Pure (runs in Node and workerd).
import {
  assembleManifest,
  bodyRef,
  bytesToHex,
  ChainWriter,
  fromHex,
  genesisHash,
  keyIdFor,
  lockHash,
  payloadHash,
  publicKeyOf,
  runIdFor,
  writeBundle,
  type Frame,
  type Manifest,
  type SignedLock,
} from "../../protocol/index.ts";
import { writeBundleV1 } from "./bundle-text.ts";

/** RFC 8032 section 7.1, TEST 1: the host's key. */
export const HOST_SECRET = fromHex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", 32);
/** RFC 8032 section 7.1, TEST 2: the server's key. */
export const SERVER_SECRET = fromHex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", 32);
export const HOST_PUBLIC = publicKeyOf(HOST_SECRET);
export const SERVER_PUBLIC = publicKeyOf(SERVER_SECRET);
export const SERVER_KEY_ID = keyIdFor(SERVER_PUBLIC);

export const HOST_ID = "h-test-1";
export const AGENT = "my-agent";
export const SESSION = "my-run-42";
export const T0 = 1_767_225_600_000;

export const BODIES = {
  prompt: "fix the failing test",
  toolInput: JSON.stringify({ command: "pytest -x" }),
  toolOutput: JSON.stringify({ exit_code: 0, stdout: "3 passed" }),
  message: "All three tests pass now.",
  llmRequest: JSON.stringify({
    model: "claude-sonnet-4-5",
    max_tokens: 1024,
    messages: [{ role: "user", content: "fix the failing test" }],
  }),
  llmResponse: JSON.stringify({ id: "msg_01", type: "message", content: [{ type: "text", text: "Running the tests." }] }),
};

export interface SampleRun {
  chain: string;
  frames: (Frame & { hash: string })[];
  locks: (SignedLock & { received_ms: number })[];
  bodies: Record<string, string>;
  manifest: Manifest;
  /** The bundle as the server writes it (version 2, JSON lines). */
  bundle: string;
  /** The same content as a version-1 bundle. */
  bundleV1: string;
}

/** What the sample run's writer does next: append a frame (none before the final lock), then perhaps lock. */
export interface SampleStep {
  frame: (Frame & { hash: string }) | null;
  lock: (SignedLock & { received_ms: number }) | null;
}

/**
 * Options of the sample run: a lock every `lockEvery` frames, `extraToolCalls` more tool calls
 * (4 frames each), the host it runs on (the RFC 8032 test host by default) and its session id.
 */
export interface SampleOptions {
  lockEvery?: number;
  extraToolCalls?: number;
  host?: { id: string; secret: Uint8Array };
  session?: string;
}

/**
 * The sample run's frames and locks one at a time, so a benchmark can write a bundle of a million
 * frames without holding them; the bodies they name are added to `bodies`.
 */
export function* sampleSteps(options: SampleOptions = {}, bodies: Record<string, string> = {}): Generator<SampleStep> {
  const host = options.host ?? { id: HOST_ID, secret: HOST_SECRET };
  const session = options.session ?? SESSION;
  const chain = runIdFor(host.id, AGENT, session);
  const w = new ChainWriter(chain);
  let t = T0;
  let count = 0;
  const keep = (role: Parameters<typeof bodyRef>[0], text: string) => {
    const ref = bodyRef(role, text, true);
    bodies[ref.sha256] = text;
    return ref;
  };
  const hs = (text: string) => {
    const ref = bodyRef("message", text, true);
    return { sha256: ref.sha256, size: ref.size };
  };
  const lockEvery = options.lockEvery ?? 5;
  const step = <K extends Parameters<ChainWriter["append"]>[0]>(
    kind: K,
    payload: Parameters<ChainWriter["append"]>[1] & object,
  ): SampleStep => {
    t += 1000;
    const { frame, hash } = w.append(kind, payload as never, t);
    count++;
    const lock = count % lockEvery === 0 ? w.lock({ secretKey: host.secret, hostId: host.id, t: t + 10 }) : null;
    return { frame: { ...frame, hash }, lock: lock ? { ...lock, received_ms: t + 500 } : null };
  };

  yield step("agent_start", { path: "hook", harness: AGENT, agent: AGENT, session_id: session, cwd: "/work" });
  const prompt = keep("prompt", BODIES.prompt);
  yield step("turn_start", { path: "hook", prompt: { sha256: prompt.sha256, size: prompt.size }, bodies: [prompt] });
  const req = keep("llm_request", BODIES.llmRequest);
  const res = keep("llm_response", BODIES.llmResponse);
  yield step("llm_call", {
    path: "gateway",
    vendor: "anthropic",
    model: "claude-sonnet-4-5",
    forwarded: true,
    status: 200,
    latency_ms: 812,
    stream: false,
    usage: { input_tokens: 1200, output_tokens: 85, cache_read_tokens: 0, cache_write_tokens: 0 },
    cost_microusd: 4875,
    request: { sha256: req.sha256, size: req.size },
    response: { sha256: res.sha256, size: res.size },
    bodies: [req, res],
  });
  const extra = options.extraToolCalls ?? 0;
  for (let i = 0; i <= extra; i++) {
    const id = `call-${i + 1}`;
    // No clause of a new workspace's policy decides run_shell: no decision, the harness's own flow ran.
    yield step("policy_decision", {
      path: "hook",
      subject: "tool",
      decision: "none",
      mode: "enforce",
      rule: "default",
      tool_name: "run_shell",
      tool_use_id: id,
    });
    const input = keep("tool_input", BODIES.toolInput);
    yield step("tool_requested", {
      path: "hook",
      tool_name: "run_shell",
      tool_use_id: id,
      input: { sha256: input.sha256, size: input.size },
      bodies: [input],
    });
    const output = keep("tool_output", BODIES.toolOutput);
    yield step("tool_call", {
      path: "hook",
      tool_name: "run_shell",
      tool_use_id: id,
      status: "ok",
      exit_code: 0,
      duration_ms: 1530,
      input: { sha256: input.sha256, size: input.size },
      output: { sha256: output.sha256, size: output.size },
      bodies: [input, output],
    });
    yield step("command", { path: "hook", tool_use_id: id, program: "pytest", command: hs("pytest -x") });
  }
  const message = keep("message", BODIES.message);
  yield step("turn_end", { path: "hook", message: { sha256: message.sha256, size: message.size }, bodies: [message] });
  yield step("agent_stop", { path: "hook", reason: "session_end", outcome: "completed" });
  const final = w.lock({ secretKey: host.secret, hostId: host.id, t: t + 20, final: true });
  yield { frame: null, lock: final ? { ...final, received_ms: t + 600 } : null };
}

/** The sample run's metadata, as its bundle names it. */
export function sampleRunMeta(first: number, last: number, hostId = HOST_ID, session = SESSION): SampleRun["manifest"]["run"] {
  return {
    id: runIdFor(hostId, AGENT, session),
    workspace: "ws_demo",
    host: hostId,
    harness: AGENT,
    agent: AGENT,
    session_id: session,
    status: "ended",
    outcome: "completed",
    environment: "customer_computer",
    mode: "enforce",
    first_frame_ms: first,
    last_frame_ms: last,
  };
}

/** Builds the sample run; `extraToolCalls` pads it with more tool calls (for benchmarks). */
export function sampleRun(options: SampleOptions = {}): SampleRun {
  const hostId = options.host?.id ?? HOST_ID;
  const session = options.session ?? SESSION;
  const chain = runIdFor(hostId, AGENT, session);
  const frames: SampleRun["frames"] = [];
  const locks: SampleRun["locks"] = [];
  const bodies: Record<string, string> = {};
  for (const { frame, lock } of sampleSteps(options, bodies)) {
    if (frame) frames.push(frame);
    if (lock) locks.push(lock);
  }
  const t = frames.at(-1)!.t;

  const manifest = assembleManifest({
    run: sampleRunMeta(frames[0]!.t, t, hostId, session),
    exportedMs: t + 60_000,
    serverKeyId: SERVER_KEY_ID,
    hostKey: options.host ? publicKeyOf(options.host.secret) : HOST_PUBLIC,
    frames,
    locks,
    equivocations: [],
    serverGaps: [],
  });
  return {
    chain,
    frames,
    locks,
    bodies,
    manifest,
    bundle: writeBundle(manifest, SERVER_SECRET, SERVER_KEY_ID),
    bundleV1: writeBundleV1(manifest, SERVER_SECRET, SERVER_KEY_ID),
  };
}

/** Every vector file, by path under test/vectors/, with its exact content. */
export function sampleVectors(): Record<string, string> {
  const run = sampleRun();
  const out: Record<string, string> = {};
  const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
  out["keys.json"] = json({
    source: "RFC 8032 section 7.1: TEST 1 is the host key, TEST 2 the server key",
    host: { secret: bytesToHex(HOST_SECRET), public: bytesToHex(HOST_PUBLIC), key_id: keyIdFor(HOST_PUBLIC) },
    server: { secret: bytesToHex(SERVER_SECRET), public: bytesToHex(SERVER_PUBLIC), key_id: SERVER_KEY_ID },
  });
  out["chain.json"] = json({
    chain: run.chain,
    genesis: bytesToHex(genesisHash(run.chain)),
    frames: run.frames.map((f) => ({ ...f, payload_hash: bytesToHex(payloadHash(f.payload)) })),
    locks: run.locks.map((l) => ({ payload: l.payload, sig: l.sig, lock_hash: lockHash(l) })),
  });
  out["bundle.jsonl"] = run.bundle;
  out["bundle-v1.json"] = run.bundleV1;
  out["server-key.pub"] = `${bytesToHex(SERVER_PUBLIC)}\n`;
  for (const [sha, text] of Object.entries(run.bodies)) out[`bodies/${sha}`] = text;
  return out;
}
