// A tiny stand-in for the server's collector routes (protocol/api.ts): /v1/ingest with ChainAcks,
// /v1/bodies (multipart, several per request), /v1/policy with ETag. Host signatures are checked with protocol/auth.ts.
import { createServer, type IncomingMessage, type Server } from "node:http";
import {
  AUTH_HEADERS,
  BudgetLeaseRequest,
  BudgetLeaseResize,
  defaultPolicy,
  IngestRequest,
  parseLock,
  policyEtag,
  requestProblem,
  ROUTES,
  SIGNED_HEADERS,
  sha256Hex,
  signPolicy,
  verifyChain,
  type ChainAck,
  type Frame,
  type KeyEndorsement,
  type Policy,
  type SignedLock,
} from "../../protocol/index.ts";
import { afterEach, beforeEach } from "vitest";
import { makeHome } from "./recorder.ts";
import { HOST_PUBLIC, SERVER_KEY_ID, SERVER_SECRET } from "./sample-run.ts";
import { StubPushConnection } from "./stub-push.ts";

export interface StubChain {
  frames: Map<number, Frame>;
  locks: SignedLock[];
  run: unknown;
}

export class StubServer {
  readonly chains = new Map<string, StubChain>();
  readonly bodies = new Map<string, { bytes: Buffer; run: string; role: string }>();
  /** Answer this many next requests with 503 + Retry-After: 1. */
  unavailable = 0;
  /** While set, /v1/ingest requests are read and never answered (a server that hangs). */
  stallIngest = false;
  /** Ingest requests held unanswered so far. */
  stalled = 0;
  /** Seqs to lose the first time they arrive (as if a batch were cut short), to test resending. */
  readonly loseOnce = new Set<number>();
  /** Every chain part received: which seqs it carried. */
  readonly received: { chain: string; seqs: number[] }[] = [];
  /** Chains over a quota: a batch carrying one is a 429 naming them, with Retry-After: 1. */
  readonly overQuota = new Set<string>();
  /** Chains whose parts make the whole batch a 400 invalid_batch naming them (as the server's checks do). */
  readonly invalidChains = new Set<string>();
  /** Runs the server says it holds (GET /v1/host/runs/:id), besides those ingested. */
  readonly heldRuns = new Set<string>();
  requests = 0;
  /** Body uploads received (POST /v1/bodies), each carrying one or more bodies. */
  bodyUploads = 0;
  /** Budget leases granted (POST /v1/host/budget/leases, PATCH to resize): each lease's amount, granted without a limit. */
  readonly leases = new Map<string, number>();
  policy: Policy = defaultPolicy("ws_test", 1);
  /** The server key policies are signed with (the sample server key unless a test rotates it). */
  signingKey: { secret: Uint8Array; keyId: string } | null = null;
  /** What GET /v1/keys/endorsements answers. */
  endorsements: KeyEndorsement[] = [];
  /** The host the served policy names: the caller (undefined), another one, or none (null). */
  policyHost: string | null | undefined = undefined;
  /** Policy fetches answered (200 or 304). */
  policyFetches = 0;
  /** Push connections accepted (GET /v1/push upgrades; the signature is not checked here). */
  readonly pushes: StubPushConnection[] = [];
  readonly #pushWaiters: (() => void)[] = [];
  readonly #nonces = new Set<string>();
  #server: Server | null = null;
  port = 0;

  async start(port = 0): Promise<number> {
    this.#server = createServer(
      (req, res) =>
        void this.#handle(req).then(({ status, body, headers }) => {
          res.writeHead(status, { "content-type": "application/json", ...headers });
          res.end(body === null ? undefined : JSON.stringify(body));
        }),
    );
    this.#server.on("upgrade", (req, socket) => {
      if (req.url !== ROUTES.push) return socket.destroy();
      this.pushes.push(new StubPushConnection(req, socket));
      for (const w of this.#pushWaiters.splice(0)) w();
    });
    await new Promise<void>((r) => this.#server!.listen(port, "127.0.0.1", r));
    this.port = (this.#server!.address() as { port: number }).port;
    return this.port;
  }

  async stop(): Promise<void> {
    for (const p of this.pushes) p.close();
    this.#server?.closeAllConnections();
    await new Promise<void>((r) => (this.#server ? this.#server.close(() => r()) : r()));
    this.#server = null;
  }

  /** The newest push connection, once there is one. */
  async pushConnection(): Promise<StubPushConnection> {
    while (this.pushes.length === 0) await new Promise<void>((r) => this.#pushWaiters.push(r));
    return this.pushes.at(-1)!;
  }

  /** This host's policy as GET /v1/policy answers it now, signed (by `signingKey` unless another key is given). */
  signedFor(host: string, signer = this.signingKey ?? { secret: SERVER_SECRET, keyId: SERVER_KEY_ID }) {
    const { host: _host, ...rest } = this.policy;
    return signPolicy({ ...rest, host }, signer.secret, signer.keyId);
  }

  /** Frames stored from seq 0 without a hole. */
  stored(chain: string): Frame[] {
    const c = this.chains.get(chain);
    const out: Frame[] = [];
    while (c?.frames.has(out.length)) out.push(c.frames.get(out.length)!);
    return out;
  }

  async #handle(req: IncomingMessage): Promise<{ status: number; body: unknown; headers?: Record<string, string> }> {
    this.requests++;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const bytes = Buffer.concat(chunks);
    if (this.stallIngest && req.url === ROUTES.ingest) {
      this.stalled++;
      // Never answered: the connection ends when the server stops.
      return new Promise(() => {});
    }
    if (this.unavailable > 0) {
      this.unavailable--;
      return { status: 503, body: { error: "unavailable", message: "try later" }, headers: { "retry-after": "1" } };
    }
    if (req.method === "GET" && req.url === "/v1/keys/endorsements") return { status: 200, body: { endorsements: this.endorsements } };
    const h = (n: string) => (req.headers[n] as string | undefined) ?? null;
    const problem = requestProblem(
      HOST_PUBLIC,
      { host: h(AUTH_HEADERS.host), time: h(AUTH_HEADERS.time), nonce: h(AUTH_HEADERS.nonce), signature: h(AUTH_HEADERS.signature) },
      {
        origin: `http://${req.headers.host}`,
        method: req.method!,
        pathAndQuery: req.url!,
        headers: Object.fromEntries(SIGNED_HEADERS.map((n) => [n, h(n)])),
        body: bytes,
      },
      Date.now(),
    );
    if (problem) return { status: 401, body: { error: "unauthorized", message: problem } };
    if (this.#nonces.has(h(AUTH_HEADERS.nonce)!)) return { status: 401, body: { error: "replayed", message: "nonce seen before" } };
    this.#nonces.add(h(AUTH_HEADERS.nonce)!);
    if (req.method === "GET" && req.url === "/v1/policy") {
      this.policyFetches++;
      // As the server does: each host's policy names it (unless a test says otherwise).
      const named = this.policyHost === undefined ? h(AUTH_HEADERS.host)! : this.policyHost;
      const { host: _host, ...rest } = this.policy;
      const signer = this.signingKey ?? { secret: SERVER_SECRET, keyId: SERVER_KEY_ID };
      const signed = signPolicy(named === null ? rest : { ...rest, host: named }, signer.secret, signer.keyId);
      const etag = policyEtag(signed);
      if (h("if-none-match") === `"${etag}"`) return { status: 304, body: null };
      return { status: 200, body: signed, headers: { etag: `"${etag}"` } };
    }
    if (req.method === "POST" && req.url === ROUTES.bodies) {
      this.bodyUploads++;
      const form = await new Response(bytes, { headers: { "content-type": h("content-type") ?? "" } }).formData();
      const results: { sha256: string; status: string }[] = [];
      const parts: [string, File][] = [];
      form.forEach((part, role) => {
        parts.push([role, part as File]);
      });
      for (const [role, part] of parts) {
        const got = Buffer.from(await part.arrayBuffer());
        const sha = part.name;
        if (sha256Hex(got) !== sha) return { status: 400, body: { error: "hash_mismatch", message: `${sha} does not hash to its name` } };
        this.bodies.set(sha, { bytes: got, run: h("x-oxagen-run") ?? "", role });
        results.push({ sha256: sha, status: "stored" });
      }
      return { status: 200, body: { results } };
    }
    if (req.method === "POST" && req.url === "/v1/ingest") {
      const parsed = IngestRequest.safeParse(JSON.parse(bytes.toString("utf8")));
      if (!parsed.success) return { status: 400, body: { error: "invalid_request", message: parsed.error.message } };
      const invalid = parsed.data.chains.flatMap((part, i) =>
        this.invalidChains.has(part.chain) ? [{ chain: part.chain, at: `chains[${i}]`, problem: "refused by the test" }] : [],
      );
      if (invalid.length > 0) return { status: 400, body: { error: "invalid_batch", message: "refused as a whole", issues: invalid } };
      const over = parsed.data.chains.flatMap((part, i) =>
        this.overQuota.has(part.chain) ? [{ chain: part.chain, at: `chains[${i}]`, problem: "over quota" }] : [],
      );
      if (over.length > 0)
        return { status: 429, body: { error: "quota_exceeded", message: "over quota", issues: over }, headers: { "retry-after": "1" } };
      return { status: 200, body: { chains: parsed.data.chains.map((part) => this.#take(part)) } };
    }
    if (req.method === "POST" && req.url === ROUTES.budgetLease) {
      const r = BudgetLeaseRequest.parse(JSON.parse(bytes.toString("utf8")));
      const id = `lease_${sha256Hex(`${this.leases.size}:${r.run}`).slice(0, 32)}`;
      this.leases.set(id, r.microusd);
      return { status: 201, body: { granted: true, lease_id: id, microusd: r.microusd, expires_ms: Date.now() + r.ttl_ms } };
    }
    const lease = /^\/v1\/host\/budget\/leases\/(lease_[0-9a-f]{32})$/.exec(req.url!);
    if (req.method === "PATCH" && lease && this.leases.has(lease[1]!)) {
      const r = BudgetLeaseResize.parse(JSON.parse(bytes.toString("utf8")));
      const microusd = Math.max(0, this.leases.get(lease[1]!)! + r.add_microusd);
      this.leases.set(lease[1]!, microusd);
      return { status: 200, body: { granted: true, lease_id: lease[1], microusd, expires_ms: Date.now() + r.ttl_ms } };
    }
    const held = /^\/v1\/host\/runs\/(run_[0-9a-f]{32})$/.exec(req.url!);
    if (req.method === "GET" && held && (this.chains.has(held[1]!) || this.heldRuns.has(held[1]!))) {
      return { status: 200, body: { id: held[1], status: "ended", frame_count: this.stored(held[1]!).length } };
    }
    return { status: 404, body: { error: "not_found", message: req.url } };
  }

  #take(part: IngestRequest["chains"][number]): ChainAck {
    let c = this.chains.get(part.chain);
    if (!c) {
      c = { frames: new Map(), locks: [], run: part.run ?? null };
      this.chains.set(part.chain, c);
    }
    const duplicates: number[] = [];
    this.received.push({ chain: part.chain, seqs: part.frames.map((f) => f.seq) });
    for (const f of part.frames) {
      if (this.loseOnce.delete(f.seq)) continue;
      if (c.frames.has(f.seq)) duplicates.push(f.seq);
      else c.frames.set(f.seq, f);
    }
    const stored = this.stored(part.chain);
    if (verifyChain(part.chain, stored).problems.length) throw new Error(`stub: chain ${part.chain} does not verify`);
    const max = Math.max(-1, ...c.frames.keys());
    const missing: [number, number][] = [];
    for (let s = stored.length; s <= max; s++) {
      if (c.frames.has(s)) continue;
      const last = missing.at(-1);
      if (last && last[1] === s - 1) last[1] = s;
      else missing.push([s, s]);
    }
    const ack: ChainAck = {
      chain: part.chain,
      status: "accepted",
      stored: stored.length,
      duplicates,
      missing,
      held: c.frames.size - stored.length,
      conflicts: [],
      locks_stored: 0,
      locks_refused: [],
    };
    for (const lock of part.locks) {
      const p = parseLock(lock);
      if (p.lock_seq < c.locks.length) continue;
      if (p.lock_seq > c.locks.length) ack.locks_refused.push({ lock_seq: p.lock_seq, reason: "send the locks in order" });
      else if (p.count > stored.length) ack.locks_refused.push({ lock_seq: p.lock_seq, reason: "resend it after the frames" });
      else {
        c.locks.push(lock);
        ack.locks_stored++;
      }
    }
    return ack;
  }
}

/** A fresh stub server for each test of the file, and `OXAGEN_HOME` a home enrolled with it (`makeHome`); put back after. */
export function stubServerEach(after: () => void = () => {}): { server: StubServer } {
  const state = {} as { server: StubServer };
  let previousHome: string | undefined;
  beforeEach(async () => {
    state.server = new StubServer();
    const port = await state.server.start();
    const home = await makeHome({ server: `http://127.0.0.1:${port}` });
    previousHome = process.env.OXAGEN_HOME;
    process.env.OXAGEN_HOME = home.dir;
  });
  afterEach(async () => {
    after();
    await state.server.stop();
    if (previousHome === undefined) delete process.env.OXAGEN_HOME;
    else process.env.OXAGEN_HOME = previousHome;
  });
  return state;
}
