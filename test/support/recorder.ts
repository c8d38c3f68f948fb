// Helpers for driving the real recorder process: a temp state dir, host.json, the two hook wires.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bytesToHex, signPolicy, defaultPolicy, policyEtag, type Frame, type Policy, type SignedLock } from "../../protocol/index.ts";
import { HOST_PUBLIC, HOST_SECRET, SERVER_KEY_ID, SERVER_PUBLIC, SERVER_SECRET } from "./sample-run.ts";

export const ROOT = join(import.meta.dirname, "../..");
export const NODE = join(ROOT, "node_modules/.bin/node");
export const TACHO = join(ROOT, "collector/bin/tacho.js");
export const HOST = "h-test-1";

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface Home {
  dir: string;
  port: number;
}

/** A temp OXAGEN_HOME with host.json (TEST 1 host key, TEST 2 server key) and optionally a signed policy. */
export async function makeHome(opts: { server?: string; policy?: Partial<Policy> } = {}): Promise<Home> {
  const dir = mkdtempSync(join(tmpdir(), "oxagen-rec-"));
  const port = await freePort();
  const host = {
    v: 1,
    host_id: HOST,
    workspace: "ws_test",
    server: opts.server ?? `http://127.0.0.1:${await freePort()}`,
    server_key: { pub: bytesToHex(SERVER_PUBLIC), key_id: SERVER_KEY_ID },
    secret_key: bytesToHex(HOST_SECRET),
    public_key: bytesToHex(HOST_PUBLIC),
    harnesses: ["claude-code"],
    ports: { hooks: port, gateway: port + 1 },
    enrolled_ms: 0,
  };
  writeFileSync(join(dir, "host.json"), JSON.stringify(host), { mode: 0o600 });
  if (opts.policy) {
    const signed = signPolicy({ ...defaultPolicy("ws_test", 1), ...opts.policy }, SERVER_SECRET, SERVER_KEY_ID);
    writeFileSync(join(dir, "policy.json"), JSON.stringify({ etag: policyEtag(signed), policy: signed, fetched_ms: 1 }));
  }
  return { dir, port };
}

export interface DaemonProc {
  proc: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts `tacho daemon run` and waits until its port answers. */
export async function startDaemon(home: Home, env: Record<string, string> = {}): Promise<DaemonProc> {
  const proc = spawn(NODE, [TACHO, "daemon", "run"], {
    env: { ...process.env, OXAGEN_HOME: home.dir, OXAGEN_SHIP_DELAY_MS: "20", OXAGEN_STOP_FLUSH_MS: "200", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on("exit", (code) => r(code)));
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`daemon exited ${proc.exitCode}: ${err}`);
    try {
      const res = await fetch(`http://127.0.0.1:${home.port}/healthz`);
      if (res.ok && ((await res.json()) as { pid: number }).pid === proc.pid) break;
    } catch {
      // Not up yet.
    }
    await sleep(50);
  }
  return { proc, stderr: () => err, exited };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `fn` returns a truthy value (the test's own timeout bounds it). */
export async function until<T>(fn: () => T | Promise<T>, every = 50): Promise<NonNullable<T>> {
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    await sleep(every);
  }
}

let counter = 0;
export function eventId(): string {
  return `${Date.now().toString(16)}${(counter++).toString(16).padStart(6, "0")}`.slice(-16).padStart(16, "0");
}

/** One line-protocol request; resolves to the parsed answer line. */
export function sendLine(port: number, request: unknown): Promise<{ v: number; answer: Record<string, unknown>; error?: string }> {
  return new Promise((resolve, reject) => {
    const sock = connect({ port, host: "127.0.0.1" });
    let data = "";
    sock.on("data", (d) => (data += d.toString()));
    sock.on("end", () => {
      try {
        resolve(JSON.parse(data));
      } catch (err) {
        reject(new Error(`bad answer ${JSON.stringify(data)}: ${err}`));
      }
    });
    sock.on("error", reject);
    sock.write(`${JSON.stringify(request)}\n`);
  });
}

/** A custom agent's event over the line wire, as `tacho hook --agent` sends it. */
export function agentEvent(port: number, agent: string, event: Record<string, unknown>, id = eventId()) {
  return sendLine(port, { v: 1, id, t: Date.now(), source: "command", harness: null, agent, event });
}

/** POSTs an HTTP hook with node:http (fetch would not let a test set Host). */
export function postHook(
  port: number,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(payload);
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/hooks/claude-code",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers },
      },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

export interface JournalView {
  frames: (Frame & { hash: string })[];
  locks: SignedLock[];
  run: unknown;
}

/** Reads every frame and lock the journal ever held (acks ignored), per chain. */
export function readJournal(home: Home): Map<string, JournalView> {
  const out = new Map<string, JournalView>();
  const dir = join(home.dir, "journal");
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".jsonl"))) {
    const view: JournalView = { frames: [], locks: [], run: null };
    for (const line of readFileSync(join(dir, name), "utf8").split("\n")) {
      if (!line) continue;
      let v: { k: string; run?: unknown; frames?: JournalView["frames"]; locks?: SignedLock[] };
      try {
        v = JSON.parse(line);
      } catch {
        continue;
      }
      if (v.k === "open" || v.k === "snap") view.run = v.run;
      if (v.k === "ev" || v.k === "snap") {
        view.frames.push(...(v.frames ?? []));
        view.locks.push(...(v.locks ?? []));
      }
    }
    out.set(name.slice(0, -6), view);
  }
  return out;
}

export function payloads(view: JournalView): Record<string, unknown>[] {
  return view.frames.map((f) => JSON.parse(f.payload) as Record<string, unknown>);
}
