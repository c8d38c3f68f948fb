import { env, exports } from "cloudflare:workers";
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import {
  bodyRef,
  bytesToHex,
  ChainWriter,
  type Frame,
  openPolicy,
  type Policy,
  publicKeyOf,
  ROUTES,
  runIdFor,
  type SignedLock,
  type SignedPolicy,
  signRequest,
  utf8,
} from "../../protocol/index.ts";
import { db, schema } from "../../workers/db/client.ts";
import { newToken } from "../../workers/lib/tokens.ts";
import worker from "../../workers/index.ts";
import { projectionStatements } from "../../workers/projection/consume.ts";
import type { ProjectionMessage } from "../../workers/projection/messages.ts";
import { HOST_SECRET, SERVER_SECRET } from "../support/sample-run.ts";

export const BASE = "http://oxagen.test";

/** A workspace and an operator token, written straight into D1 (as the dev bootstrap does). */
export async function seedWorkspace(
  id = `ws_${crypto.randomUUID().slice(0, 8)}`,
  retention: { mode: "keep" | "digest_only"; keep?: string[] } = { mode: "keep" },
) {
  const t = newToken("oxo");
  const keep = retention.keep ?? ["prompt", "tool_input", "tool_output", "message", "llm_request", "llm_response", "error"];
  await db(env).batch([
    db(env)
      .insert(schema.workspaces)
      .values({ id, name: id, retentionMode: retention.mode, retentionKeep: JSON.stringify(keep), mode: "enforce", createdMs: Date.now() }),
    db(env)
      .insert(schema.operatorTokens)
      .values({ id: t.id, workspaceId: id, name: "test", secretHash: t.secretHash, createdMs: Date.now() }),
  ]);
  return { workspaceId: id, token: t.token };
}

/** An operator call. */
export function op(token: string, path: string, init: { method?: string; json?: unknown } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (init.json !== undefined) headers["content-type"] = "application/json";
  return exports.default.fetch(`${BASE}${path}`, {
    method: init.method ?? (init.json !== undefined ? "POST" : "GET"),
    headers,
    body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
  });
}

/** A host-signed call. */
export function hostCall(
  host: TestHost,
  method: string,
  path: string,
  body: string | Uint8Array = "",
  extra: Record<string, string> = {},
  now = Date.now(),
) {
  const bytes = typeof body === "string" ? utf8(body) : body;
  const sent: Record<string, string> =
    method !== "GET" && !("content-type" in extra) ? { "content-type": "application/json", ...extra } : extra;
  const headers = {
    ...sent,
    ...signRequest(host.secret, { origin: BASE, method, pathAndQuery: path, hostId: host.id, headers: sent, body: bytes, time: now }),
  };
  return exports.default.fetch(`${BASE}${path}`, { method, headers, body: method === "GET" ? undefined : (bytes as BodyInit) });
}

export interface TestHost {
  id: string;
  secret: Uint8Array;
  workspaceId: string;
}

/** Enrolls a host through the API with a one-time token. */
export async function enrollHost(
  token: string,
  secret: Uint8Array = HOST_SECRET,
  harnesses: string[] = ["claude-code"],
): Promise<TestHost> {
  const et = (await (await op(token, "/v1/enrollment-tokens", { json: {} })).json()) as { token: string };
  const res = await exports.default.fetch(`${BASE}/v1/enroll`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: et.token, public_key: bytesToHex(publicKeyOf(secret)), hostname: "box", harnesses }),
  });
  if (res.status !== 201) throw new Error(`enroll failed: ${res.status} ${await res.text()}`);
  const answer = (await res.json()) as { host_id: string; workspace: string };
  return { id: answer.host_id, secret, workspaceId: answer.workspace };
}

/** A run being written by a test host: frames and locks made with protocol's ChainWriter. */
export class TestRun {
  readonly chain: string;
  readonly writer: ChainWriter;
  readonly frames: Frame[] = [];
  readonly locks: SignedLock[] = [];
  readonly bodies = new Map<string, string>();
  t = 1_767_225_600_000;

  readonly host: TestHost;
  readonly session: string;
  readonly harness: string;

  constructor(host: TestHost, session: string = crypto.randomUUID(), harness = "claude-code") {
    this.host = host;
    this.session = session;
    this.harness = harness;
    this.chain = runIdFor(host.id, harness, session);
    this.writer = new ChainWriter(this.chain);
  }

  get meta() {
    return { harness: this.harness, agent: null, session_id: this.session };
  }

  start(): Frame {
    return this.add("agent_start", { path: "hook", harness: this.harness, session_id: this.session });
  }

  /** Appends a tool call; with `body`, it names a kept tool_input body. */
  tool(body?: string): Frame {
    const bodies = body === undefined ? undefined : [this.#keep("tool_input", body)];
    return this.add("tool_requested", {
      path: "hook",
      tool_name: "Bash",
      input: { sha256: "0".repeat(64), size: 1 },
      ...(bodies ? { bodies } : {}),
    });
  }

  /**
   * Appends a model call the gateway carried; its cost is the server's to price (a `cost_microusd`
   * claim is ignored). `status` is the vendor's answer, `bodies` the bodies the frame names.
   */
  llm(
    o: {
      model?: string;
      vendor?: string;
      usage?: Record<string, number>;
      claim?: number;
      path?: "gateway" | "transcript";
      status?: number;
      bodies?: object[];
    } = {},
  ): Frame {
    return this.add("llm_call", {
      path: o.path ?? "gateway",
      vendor: o.vendor ?? "anthropic",
      model: o.model ?? "claude-sonnet-4-5",
      forwarded: true,
      ...(o.status !== undefined ? { status: o.status } : {}),
      usage: o.usage ?? { input_tokens: 1000, output_tokens: 100 },
      ...(o.claim !== undefined ? { cost_microusd: o.claim } : {}),
      ...(o.bodies ? { bodies: o.bodies } : {}),
    });
  }

  stop(outcome: "completed" | "crashed" = "completed"): Frame {
    return this.add("agent_stop", { path: "hook", reason: "session_end", outcome });
  }

  add(kind: Parameters<ChainWriter["append"]>[0], payload: object): Frame {
    this.t += 1000;
    const { frame } = this.writer.append(kind, payload as never, this.t);
    this.frames.push(frame);
    return frame;
  }

  lock(final = false): SignedLock {
    const lock = this.writer.lock({ secretKey: this.host.secret, hostId: this.host.id, t: this.t + 1, final })!;
    this.locks.push(lock);
    return lock;
  }

  part(frames: Frame[] = this.frames, locks: SignedLock[] = []) {
    return { chain: this.chain, run: this.meta, frames, locks };
  }

  #keep(role: "tool_input", text: string) {
    const ref = bodyRef(role, text, true);
    this.bodies.set(ref.sha256, text);
    return ref;
  }
}

/** POSTs one ingest batch, then waits until the fleet rows of its chains caught up with them ({@link projected}). */
export async function ingest(host: TestHost, chains: unknown[]) {
  const res = await hostCall(host, "POST", "/v1/ingest", JSON.stringify({ chains }));
  const body = (await res.json()) as { chains: Record<string, unknown>[]; error?: string; message?: string };
  if (res.status === 200) await projected(chains.map((c) => (c as { chain: string }).chain));
  return { status: res.status, body };
}

/**
 * Waits until D1 holds each chain's state as its object holds it now: the run's row (or, for a
 * computer's own chain, its spend rows) at the chain's version. The fleet rows are a projection
 * written by the queue's consumer, so a test reads them once they arrived; the test's own timeout
 * bounds the wait.
 */
export async function projected(chains: string[]) {
  for (const chain of chains) {
    const s = await env.CHAINS.get(env.CHAINS.idFromName(chain)).summary();
    if (!s) continue;
    const query =
      s.kind === "run"
        ? env.DB.prepare("SELECT version AS v FROM runs WHERE id = ?").bind(chain)
        : env.DB.prepare("SELECT max(version) AS v FROM spend WHERE run_id = ?").bind(chain);
    if (s.kind === "host" && s.spendMicrousd === 0 && s.unpricedCalls === 0) continue;
    for (;;) {
      const row = await query.first<{ v: number | null }>();
      if ((row?.v ?? -1) >= s.version) break;
      await scheduler.wait(20);
    }
  }
}

/**
 * Writes run rows straight into D1 (as many runs as a test needs, without a chain behind them):
 * run `i` of `host`, ended, unless `extra(i)` says otherwise. D1 takes at most 100 statements a batch.
 */
export async function seedRuns(host: TestHost, ids: number[], extra: (i: number) => Partial<typeof schema.runs.$inferInsert> = () => ({})) {
  const d = db(env);
  const now = Date.now();
  const inserts = ids.map((i) =>
    d.insert(schema.runs).values({
      id: `run_${i.toString(16).padStart(32, "0")}`,
      workspaceId: host.workspaceId,
      hostId: host.id,
      harness: "claude-code",
      sessionId: `s${i}`,
      status: "ended",
      tier: "observe",
      tierReason: "-",
      grade: "inspect",
      gradeReason: "-",
      updatedMs: now,
      ...extra(i),
    }),
  );
  for (let i = 0; i < inserts.length; i += 100) {
    const chunk = inserts.slice(i, i + 100);
    await d.batch(chunk as [(typeof chunk)[number], ...(typeof chunk)[number][]]);
  }
}

/** A host's own policy, fetched signed and opened under the server key. */
export async function hostPolicyOf(h: TestHost): Promise<Policy> {
  const res = await hostCall(h, "GET", "/v1/policy");
  if (res.status !== 200) throw new Error(`policy: ${res.status}`);
  return openPolicy((await res.json()) as SignedPolicy, publicKeyOf(SERVER_SECRET));
}

type AuthHeaders = ReturnType<typeof signRequest>;

/** A push announcement as a connection receives it. */
export interface PushMessage {
  type: string;
  etag: string;
  change: string;
  /** The host's signed policy, when the push carries it. */
  policy?: SignedPolicy;
}

/**
 * Opens a host's push connection (`sign` may spoil its signed headers); collects the pushes.
 * Like a recorder, it acknowledges each one as it arrives, unless `ack` is false: then the test
 * acknowledges with `ack(change)` (or never). `received(n)` resolves once `n` arrived: the test's
 * own timeout bounds it, nothing is timed.
 */
export async function openPush(h: TestHost, sign: (s: AuthHeaders) => AuthHeaders = (s) => s, opts: { ack?: boolean } = {}) {
  const auth = sign(
    signRequest(h.secret, { origin: BASE, method: "GET", pathAndQuery: ROUTES.push, hostId: h.id, headers: {}, body: new Uint8Array() }),
  );
  const res = await exports.default.fetch(`${BASE}${ROUTES.push}`, { headers: { upgrade: "websocket", ...auth } });
  const messages: PushMessage[] = [];
  const waiters: (() => void)[] = [];
  const ws = res.webSocket;
  const ack = (change: string) => ws!.send(JSON.stringify({ type: "ack", change }));
  if (ws) {
    ws.accept();
    ws.addEventListener("message", (ev) => {
      if (ev.data === "pong") return;
      const msg = JSON.parse(String(ev.data)) as PushMessage;
      messages.push(msg);
      if (opts.ack !== false) ack(msg.change);
      for (const w of waiters.splice(0)) w();
    });
  }
  const received = async (n: number) => {
    while (messages.length < n) await new Promise<void>((r) => waiters.push(r));
    return messages;
  };
  return { res, ws, messages, received, ack };
}

/**
 * Writes spend rows as the projection's consumer does (its statements, one transaction), so the
 * daily rollup moves with them: one chain message per run, at `version`.
 */
export async function projectSpend(rows: (typeof schema.spend.$inferInsert)[], version = 1) {
  const runs = new Map<string, (typeof schema.spend.$inferInsert)[]>();
  for (const r of rows) runs.set(r.runId, [...(runs.get(r.runId) ?? []), { ...r, version }]);
  const messages = [...runs].map(([chain, spend]) => ({ kind: "chain" as const, chain, version, run: null, agent: null, spend }));
  await env.DB.batch(projectionStatements(env.DB, messages));
}

/**
 * Hands `bodies` to the projection's consumer as one queue batch; `batchOf` stands in for D1's
 * batch (to kill the consumer before or after its write). A handler that throws has its whole
 * batch delivered again (nothing of it acknowledged): "redelivered".
 */
export async function deliverProjection(bodies: ProjectionMessage[], batchOf: D1Database["batch"] = (s) => env.DB.batch(s)) {
  const batch = createMessageBatch<ProjectionMessage>(
    "oxagen-projection",
    bodies.map((body, i) => ({ id: `m${i}`, timestamp: Date.now(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  const DB = { prepare: (q: string) => env.DB.prepare(q), batch: batchOf } as unknown as D1Database;
  const threw = await worker.queue(batch, { ...env, DB }, ctx).then(
    () => false,
    () => true,
  );
  const result = await getQueueResult(batch, ctx);
  return threw ? "redelivered" : result.ackAll || result.explicitAcks.length > 0 ? "partly acknowledged" : "ok";
}
