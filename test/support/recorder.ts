// Helpers for driving the real recorder process: a temp state dir, host.json, the two hook wires.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { atSocket } from "../../collector/lib/channel.cjs";
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
  /** host.json `hook_secret`: what HTTP hooks must carry. */
  secret: string;
}

export const HOOK_SECRET = "5ec2e7".padEnd(64, "0");

/**
 * Keeps `tacho hook` from starting a recorder in this state directory when it finds none (the
 * stamp says a hook just did): tests start and stop their recorders themselves.
 */
export function holdAutostart(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stamp = join(dir, "recorder-autostart");
  writeFileSync(stamp, "");
  const later = new Date(Date.now() + 7 * 86_400_000);
  utimesSync(stamp, later, later);
}

/** A temp OXAGEN_HOME with host.json (TEST 1 host key, TEST 2 server key) and optionally a signed policy. */
export async function makeHome(
  opts: { server?: string; policy?: Partial<Policy>; autostart?: boolean; port?: number; secret?: string } = {},
): Promise<Home> {
  const dir = mkdtempSync(join(tmpdir(), "oxagen-rec-"));
  if (!opts.autostart) holdAutostart(dir);
  const port = opts.port ?? (await freePort());
  const secret = opts.secret ?? HOOK_SECRET;
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
    hook_secret: secret,
  };
  writeFileSync(join(dir, "host.json"), JSON.stringify(host), { mode: 0o600 });
  if (opts.policy) {
    const signed = signPolicy({ ...defaultPolicy("ws_test", 1), ...opts.policy }, SERVER_SECRET, SERVER_KEY_ID);
    writeFileSync(join(dir, "policy.json"), JSON.stringify({ etag: policyEtag(signed), policy: signed, fetched_ms: 1 }));
  }
  return { dir, port, secret };
}

export interface DaemonProc {
  proc: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts `tacho daemon run` and waits until it answers on its socket. */
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
    const health = await socketHealth(home).catch(() => null);
    if (health?.pid === proc.pid) break;
    await sleep(50);
  }
  return { proc, stderr: () => err, exited };
}

/** The recorder's health, asked on its socket. */
export async function socketHealth(home: Pick<Home, "dir">): Promise<{ pid: number; http: string } | null> {
  const reply = (await sendLine(home, { v: 1, op: "health" })) as unknown as { health?: { pid: number; http: string } };
  return reply.health ?? null;
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

/** One line-protocol request on the recorder's socket; resolves to the parsed answer line. */
export function sendLine(
  home: Pick<Home, "dir">,
  request: unknown,
): Promise<{ v: number; answer: Record<string, unknown>; error?: string }> {
  return new Promise((resolve, reject) => {
    const sock = atSocket(home.dir, (path) => connect({ path }));
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
export function agentEvent(home: Pick<Home, "dir">, agent: string, event: Record<string, unknown>, id = eventId()) {
  return sendLine(home, { v: 1, id, t: Date.now(), source: "command", harness: null, agent, event });
}

/** POSTs an HTTP hook with node:http (fetch would not let a test set Host), with the enrollment's secret unless `headers` replaces it. */
export function postHook(
  home: Pick<Home, "port" | "secret">,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(payload);
    const req = request(
      {
        host: "127.0.0.1",
        port: home.port,
        method: "POST",
        path: "/hooks/claude-code",
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          "x-oxagen-hook-secret": home.secret,
          ...headers,
        },
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

/** The recorders a test file starts, directly or through a hook that found none: `stop()` (afterEach) kills them all. */
export class Recorders {
  readonly running: DaemonProc[] = [];
  /** State directories whose recorder a hook may have started: stopped by the pid it wrote, whatever the test's outcome. */
  readonly autostarted: string[] = [];

  async stop(): Promise<void> {
    for (const d of this.running.splice(0)) {
      d.proc.kill("SIGKILL");
      await d.exited;
    }
    for (const dir of this.autostarted.splice(0)) {
      try {
        process.kill(Number(readFileSync(join(dir, "recorder.pid"), "utf8")), "SIGKILL");
      } catch {
        // None started, or gone already.
      }
    }
  }
}
