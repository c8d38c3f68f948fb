// The recorder's kept bodies reach the real Worker (wrangler dev) in multi-body uploads
// (POST /v1/bodies, up to 64 of a run per signed request). A pass-through proxy in front of the
// Worker holds the shipping routes back while a session records (so every body waits for one
// shipment), counts the body requests and their parts, and can keep an upload's answer from the
// recorder; the Worker's meter (OXAGEN_METER) counts the uploads it took.
import { spawn } from "node:child_process";
import { connect } from "node:net";
import type { Duplex } from "node:stream";
import { createServer, type IncomingMessage, request, type Server } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_UPLOAD_BODIES } from "../../../protocol/index.ts";
import { type Computer, daemonUp, drained, eventually, newComputer, OXAGEN, runDaemon, stopDaemon } from "../../support/e2e.ts";
import { agentEvent, freePort, type Home, NODE, readJournal } from "../../support/recorder.ts";
import { type LocalWorker, startWorker } from "../../support/worker.ts";

type Mode = "pass" | "down" | "hold";

/** Forwards everything to the Worker; "down" refuses the shipping routes, "hold" keeps each upload's answer from the caller. */
class ShippingGate {
  mode: Mode = "pass";
  /** Each body request that reached the Worker: its method and path, and the bodies it carried. */
  readonly uploads: { method: string; path: string; parts: number; status: number }[] = [];
  readonly held: IncomingMessage[] = [];
  /** After this many more uploads reached the Worker, answer the next one 503 with Retry-After: 1 (once). */
  failAfter: number | null = null;
  readonly target: number;
  #server: Server | null = null;
  readonly #tunnels = new Set<Duplex>();

  constructor(target: number) {
    this.target = target;
  }

  async start(port: number): Promise<void> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const shipping = req.url === "/v1/ingest" || req.url!.startsWith("/v1/bodies");
        if (shipping && this.mode === "down") return req.socket.destroy();
        const body = Buffer.concat(chunks);
        const upload = req.url!.startsWith("/v1/bodies");
        const parts = upload ? await partsOf(req.headers["content-type"], body) : 0;
        if (upload && this.failAfter !== null && this.failAfter-- === 0) {
          this.failAfter = null;
          this.uploads.push({ method: req.method!, path: req.url!, parts, status: 503 });
          return void res
            .writeHead(503, { "retry-after": "1", "content-type": "application/json" })
            .end('{"error":"unavailable","message":"try later"}');
        }
        const up = request({ host: "127.0.0.1", port: this.target, method: req.method, path: req.url, headers: req.headers }, (answer) => {
          const got: Buffer[] = [];
          answer.on("data", (c: Buffer) => got.push(c));
          answer.on("end", () => {
            if (upload) this.uploads.push({ method: req.method!, path: req.url!, parts, status: answer.statusCode! });
            // Taken by the Worker, its answer never reaches the recorder.
            if (upload && this.mode === "hold") return void this.held.push(req);
            res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(got));
          });
        });
        up.on("error", () => res.socket?.destroy());
        up.end(body);
      });
    });
    // The push WebSocket: bytes both ways.
    this.#server.on("upgrade", (req, socket, head) => {
      const up = connect(this.target, "127.0.0.1", () => {
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        up.write(`${lines.join("\r\n")}\r\n\r\n`);
        up.write(head);
        up.pipe(socket).pipe(up);
      });
      this.#tunnels.add(up).add(socket);
      up.on("error", () => socket.destroy());
      socket.on("error", () => up.destroy());
    });
    await new Promise<void>((r) => this.#server!.listen(port, "127.0.0.1", r));
  }

  stop(): Promise<void> {
    this.#server?.closeAllConnections();
    for (const t of this.#tunnels) t.destroy();
    return new Promise((r) => (this.#server ? this.#server.close(() => r()) : r()));
  }
}

async function partsOf(contentType: string | undefined, body: Buffer): Promise<number> {
  if (!contentType?.startsWith("multipart/form-data")) return 1;
  let n = 0;
  (await new Response(new Uint8Array(body), { headers: { "content-type": contentType } }).formData()).forEach(() => {
    n++;
  });
  return n;
}

let worker: LocalWorker;
let gate: ShippingGate;
let proxyUrl: string;

beforeAll(async () => {
  const port = await freePort();
  proxyUrl = `http://127.0.0.1:${port}`;
  // Hosts sign for the proxy's origin, the one they call.
  worker = await startWorker({ vars: { OXAGEN_METER: "1", OXAGEN_ORIGIN: proxyUrl } });
  gate = new ShippingGate(worker.port);
  await gate.start(port);
}, 240_000);

afterAll(async () => {
  await gate?.stop();
  await worker?.stop();
});

/** `oxagen agent enroll` through the proxy, run without blocking this process (the proxy answers it). */
async function enrollViaProxy(computer: Computer): Promise<void> {
  const res = await worker.api("/v1/enrollment-tokens", { method: "POST", body: "{}" });
  const { token } = (await res.json()) as { token: string };
  const args = ["agent", "enroll", "--no-start", "--server", proxyUrl, "--token", token, "--hooks-port", String(computer.port)];
  const child = spawn(NODE, [OXAGEN, ...args, "--gateway-port", String(computer.gatewayPort), "--json"], { env: computer.env });
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((r) => child.on("exit", r));
  if (code !== 0) throw new Error(`oxagen agent enroll exited ${code}: ${err}`);
}

interface Status {
  pending: { frames: number; locks: number; bodies: number };
  last_error: string | null;
}
const status = async (c: Computer): Promise<Status> => {
  const { readFileSync } = await import("node:fs");
  return JSON.parse(readFileSync(join(c.env.OXAGEN_HOME!, "recorder-status.json"), "utf8")) as Status;
};
const meter = async () => (await (await fetch(`${worker.url}/__meter?reset=1`)).json()) as Record<string, number>;
const uploadsTaken = (m: Record<string, number>) => m["request.do.CHAINS.ownedBy"] ?? 0;

/** The kept bodies the journal's frames name (sha256 → role), in the order recorded. */
function keptBodies(c: Computer): Map<string, string> {
  const out = new Map<string, string>();
  for (const view of readJournal({ dir: c.env.OXAGEN_HOME! } as Home).values())
    for (const f of view.frames) {
      const refs = (JSON.parse(f.payload) as { bodies?: { sha256: string; role: string; kept: boolean }[] }).bodies ?? [];
      for (const b of refs) if (b.kept) out.set(b.sha256, b.role);
    }
  return out;
}

/** A session of `tools` tool calls recorded while shipping is down, on a fresh computer with its recorder running. */
async function recordOffline(session: string, tools: number) {
  const computer = await newComputer();
  await enrollViaProxy(computer);
  gate.mode = "down";
  const daemon = runDaemon(computer);
  await daemonUp(computer);
  const home = { dir: computer.env.OXAGEN_HOME! };
  const send = async (event: Record<string, unknown>) => {
    const r = await agentEvent(home, "uploader", { session_id: session, ...event });
    if (r.error) throw new Error(r.error);
  };
  await send({ hook_event_name: "SessionStart" });
  await send({ hook_event_name: "UserPromptSubmit", prompt: `ship the bodies of ${session}` });
  for (let i = 0; i < tools; i++)
    await send({
      hook_event_name: "PostToolUse",
      tool_name: "Bash",
      tool_input: { command: `make ${session}-part${i}` },
      tool_use_id: `t${i}`,
      tool_response: { stdout: `${session}: output ${i} `.repeat(20) },
    });
  const bodies = keptBodies(computer);
  await eventually(async () => (await status(computer)).pending.bodies === bodies.size, "every kept body pending");
  return { computer, daemon, bodies };
}

/** Sets the workspace's retention (PATCH: its other settings stay). */
const retain = (keep: string[]) =>
  worker.api(`/v1/workspaces/${worker.workspace}`, { method: "PATCH", body: JSON.stringify({ retention: { mode: "keep", keep } }) });

const onServer = async (sha: string) => (await worker.api(`/v1/bodies/${sha}`)).status;

describe("kept bodies ship in multi-body uploads", () => {
  it("ships N bodies of a run in ceil(N/64) signed requests, each taken once by the Worker", async () => {
    const { computer, daemon, bodies } = await recordOffline("many", 130);
    const n = bodies.size;
    expect(n).toBeGreaterThan(2 * MAX_UPLOAD_BODIES);
    const before = gate.uploads.length;
    await meter();
    gate.mode = "pass";
    await drained(computer);
    const uploads = gate.uploads.slice(before);
    expect(uploads.every((u) => u.method === "POST" && u.path === "/v1/bodies")).toBe(true);
    expect(uploads).toHaveLength(Math.ceil(n / MAX_UPLOAD_BODIES));
    expect(uploads.reduce((s, u) => s + u.parts, 0)).toBe(n);
    expect(uploadsTaken(await meter())).toBe(Math.ceil(n / MAX_UPLOAD_BODIES));
    for (const sha of bodies.keys()) expect(await onServer(sha)).toBe(200);
    expect((await status(computer)).last_error ?? "").not.toMatch(/refused/);
    await stopDaemon(daemon);
  }, 240_000);

  it("honours a per-part refusal: the bodies the workspace keeps are stored, the others are final and not sent again", async () => {
    const { computer, daemon, bodies } = await recordOffline("partial", 5);
    // The operator narrows retention after the bodies were kept: the server refuses the tool bodies per part.
    const policy = await retain(["prompt"]);
    expect(policy.status).toBe(200);
    const before = gate.uploads.length;
    gate.mode = "pass";
    await drained(computer);
    try {
      const uploads = gate.uploads.slice(before);
      expect(uploads).toEqual([{ method: "POST", path: "/v1/bodies", parts: bodies.size, status: 200 }]);
      for (const [sha, role] of bodies) expect([role, await onServer(sha)]).toEqual([role, role === "prompt" ? 200 : 404]);
      expect((await status(computer)).last_error).toMatch(
        /refused: not_retained The workspace does not keep tool_\w+ bodies\. \(and \d+ more\)/,
      );
    } finally {
      await retain(["prompt", "tool_input", "tool_output", "message", "llm_request", "llm_response", "error"]);
      await stopDaemon(daemon);
    }
  }, 240_000);

  it("loses nothing when the recorder dies before an upload's answer: it sends those bodies again after a restart", async () => {
    const { computer, daemon, bodies } = await recordOffline("crash", 10);
    const before = gate.uploads.length;
    gate.mode = "hold";
    // The Worker took the upload (its answer held back); the recorder dies before reading it.
    await eventually(async () => gate.held.length > 0, "an upload the Worker took");
    expect(gate.uploads.slice(before)).toEqual([{ method: "POST", path: "/v1/bodies", parts: bodies.size, status: 200 }]);
    daemon.proc.kill("SIGKILL");
    await daemon.exited;
    for (const req of gate.held.splice(0)) req.socket.destroy();
    gate.mode = "pass";
    const since = Date.now();
    const again = runDaemon(computer);
    await drained(computer, since);
    // Nothing was marked shipped without the answer: the restarted recorder uploaded every body again.
    expect(gate.uploads.slice(before + 1)).toEqual([{ method: "POST", path: "/v1/bodies", parts: bodies.size, status: 200 }]);
    for (const sha of bodies.keys()) expect(await onServer(sha)).toBe(200);
    await stopDaemon(again);
  }, 240_000);

  it("halves an upload one part refuses whole (bytes that no longer hash to its name) until that part goes alone; the others are stored", async () => {
    const { computer, daemon, bodies } = await recordOffline("corrupt", 6);
    const [bad] = [...bodies.keys()].slice(3);
    writeFileSync(join(computer.env.OXAGEN_HOME!, "journal", "bodies", bad!), "not the bytes the frame names");
    const before = gate.uploads.length;
    gate.mode = "pass";
    await drained(computer);
    const uploads = gate.uploads.slice(before);
    // The whole upload, then halves: each refused half halved again, each good one stored.
    const refused = uploads.filter((u) => u.status === 400);
    expect(uploads[0]).toEqual({ method: "POST", path: "/v1/bodies", parts: bodies.size, status: 400 });
    // Each refused upload held the bad part, half as many as the one before, down to it alone.
    for (let i = 1; i < refused.length; i++) {
      const prev = refused[i - 1]!.parts;
      expect([Math.ceil(prev / 2), Math.floor(prev / 2)]).toContain(refused[i]!.parts);
    }
    expect(refused.at(-1)!.parts).toBe(1);
    const stored = uploads.filter((u) => u.status === 200);
    expect(stored.reduce((n, u) => n + u.parts, 0)).toBe(bodies.size - 1);
    expect(uploads.length).toBeLessThanOrEqual(1 + 2 * Math.ceil(Math.log2(bodies.size)));
    for (const sha of bodies.keys()) expect([sha, await onServer(sha)]).toEqual([sha, sha === bad ? 404 : 200]);
    expect((await status(computer)).last_error).toContain(`body ${bad} refused: HTTP 400`);
    await stopDaemon(daemon);
  }, 240_000);

  it("retries an upload answered 503 with the backoff, without sending again the bodies an earlier upload shipped", async () => {
    const { computer, daemon, bodies } = await recordOffline("transient", 40);
    const n = bodies.size;
    expect(n).toBeGreaterThan(MAX_UPLOAD_BODIES);
    const before = gate.uploads.length;
    gate.failAfter = 1;
    gate.mode = "pass";
    await drained(computer);
    const rest = n - MAX_UPLOAD_BODIES;
    expect(gate.uploads.slice(before)).toEqual([
      { method: "POST", path: "/v1/bodies", parts: MAX_UPLOAD_BODIES, status: 200 },
      { method: "POST", path: "/v1/bodies", parts: rest, status: 503 },
      { method: "POST", path: "/v1/bodies", parts: rest, status: 200 },
    ]);
    for (const sha of bodies.keys()) expect(await onServer(sha)).toBe(200);
    await stopDaemon(daemon);
  }, 240_000);
});
