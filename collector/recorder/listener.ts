import { chmodSync, mkdirSync, rmSync, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { connect, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { atSocket } from "../lib/channel.cjs";
import {
  closer,
  HOOK_SECRET_HEADER,
  type Listening,
  listenLoopback,
  loopbackRequest,
  carriesSecret,
  sendJson,
  track,
} from "../lib/loopback.ts";

/** The most a request (line or HTTP body) may carry. */
export const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

export interface SocketHandlers {
  /** One line-protocol request (already parsed JSON); returns the answer object. */
  line(request: unknown): unknown;
  /** What `{"v":1,"op":"health"}` reports. */
  health(): unknown;
  log(msg: string): void;
}

export interface HttpHandlers {
  /** One HTTP hook (the harness's payload) for a harness label; returns the hook answer, throws when it could not be recorded. */
  http(label: string, payload: unknown): unknown;
  /** The enrollment's hook secret (`now`: read again at once); null for an enrollment made before there was one (then unchecked). */
  secret(now?: boolean): string | null;
  /** What GET /healthz reports. */
  health(): unknown;
  log(msg: string): void;
}

function inUse(message: string): Error {
  return Object.assign(new Error(message), { code: "EADDRINUSE" });
}

/** Takes a short-lived lock (a directory; one older than 30 s is left from a crash and taken over). */
function claim(path: string): () => void {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    if (Date.now() - statSync(path).mtimeMs < 30_000) throw inUse("another recorder is starting for this enrollment");
    rmSync(path, { recursive: true, force: true });
    mkdirSync(path, { mode: 0o700 });
  }
  return () => rmSync(path, { recursive: true, force: true });
}

/** True when something accepts connections on the socket in `dir` (a live recorder, hung or not). */
function socketLive(dir: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = atSocket(dir, (path) => connect({ path }));
    s.on("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });
}

/**
 * The recorder's own channel: the line protocol of `tacho hook` on the Unix socket in the state
 * directory (`dir`, made 0700 first), so only this user's enrollment reaches it. A socket another
 * recorder still answers on is an error (EADDRINUSE); one left by a dead recorder is replaced.
 */
export async function listenSocket(dir: string, handlers: SocketHandlers): Promise<Listening> {
  chmodSync(dir, 0o700);
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    track(sockets, socket);
    onLine(socket, handlers);
  });
  const bind = () =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      atSocket(dir, (path) => server.listen({ path }, () => resolve()));
    });
  try {
    await bind();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
    // A socket file is there. Only one starting recorder may look at it and replace it, or two
    // could each remove the other's and both run on one journal.
    const release = claim(join(dir, "recorder.starting"));
    try {
      if (await socketLive(dir)) throw inUse("another recorder is already running for this enrollment");
      atSocket(dir, (path) => rmSync(path, { force: true }));
      await bind();
    } finally {
      release();
    }
  }
  server.removeAllListeners("error");
  server.on("error", (err) => handlers.log(`socket: ${err.message}`));
  return { server, close: closer(server, sockets) };
}

function onLine(socket: Socket, handlers: SocketHandlers): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let done = false;
  const reply = (answer: unknown) => {
    done = true;
    socket.end(`${JSON.stringify(answer)}\n`);
  };
  const take = (chunk: Buffer) => {
    if (done) return;
    const nl = chunk.indexOf(0x0a);
    chunks.push(nl < 0 ? chunk : chunk.subarray(0, nl));
    size += nl < 0 ? chunk.length : nl;
    if (size > MAX_REQUEST_BYTES) {
      reply({ v: 1, error: "request too large" });
      return;
    }
    if (nl < 0) return;
    socket.off("data", take);
    let request: unknown;
    try {
      request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      reply({ v: 1, error: "request is not JSON" });
      return;
    }
    if ((request as { op?: unknown } | null)?.op === "health") {
      reply({ v: 1, health: handlers.health() });
      return;
    }
    try {
      reply(handlers.line(request));
    } catch (err) {
      handlers.log(`line request failed: ${(err as Error).stack ?? err}`);
      // No answer: the hook then decides from the cached policy and spools the event, so a step the
      // recorder could not record is neither let through unchecked nor lost.
      reply({ v: 1, error: `recorder error: ${(err as Error).message}` });
    }
  };
  socket.on("data", take);
  socket.on("end", () => {
    if (!done && size > 0) take(Buffer.from("\n"));
  });
}

/**
 * The HTTP hook port on loopback (Claude Code posts its PostToolUse hooks here): only HTTP, only
 * from loopback peers, only with a loopback Host and Origin (DNS rebinding), and a hook must carry
 * the enrollment's secret (header `x-oxagen-hook-secret`). The line protocol is not served here.
 */
export function listenHttp(port: number, handlers: HttpHandlers): Promise<Listening> {
  return listenLoopback(port, (req, res) => onHttp(req, res, port, handlers));
}

// Each hook its own connection: an answer closes it.
function send(res: ServerResponse, status: number, body: unknown): void {
  sendJson(res, status, body, { connection: "close" });
}

function onHttp(req: IncomingMessage, res: ServerResponse, port: number, handlers: HttpHandlers): void {
  const host = req.headers.host ?? "";
  if (!loopbackRequest(req, port)) {
    send(res, 403, { error: "forbidden", message: "the recorder answers loopback clients only" });
    req.resume();
    return;
  }
  const url = new URL(req.url ?? "/", `http://${host}`);
  if (req.method === "GET" && url.pathname === "/healthz") {
    send(res, 200, handlers.health());
    return;
  }
  const match = /^\/hooks\/([a-z0-9][a-z0-9._-]{0,63})$/.exec(url.pathname);
  if (req.method !== "POST" || !match) {
    send(res, 404, { error: "not_found", message: "POST /hooks/<harness>" });
    req.resume();
    return;
  }
  if (!carriesSecret(req.headers[HOOK_SECRET_HEADER], handlers.secret)) {
    send(res, 401, { error: "unauthorized", message: `the hook did not carry this enrollment's ${HOOK_SECRET_HEADER}` });
    req.resume();
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size <= MAX_REQUEST_BYTES) chunks.push(chunk);
  });
  req.on("end", () => {
    if (size > MAX_REQUEST_BYTES) return send(res, 413, { error: "too_large", message: "payload over 16 MiB" });
    let payload: unknown;
    try {
      payload = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return send(res, 400, { error: "invalid_request", message: "body is not JSON" });
    }
    try {
      send(res, 200, handlers.http(match[1]!, payload));
    } catch (err) {
      // Not a 200 `{}`: that would tell the harness the step was recorded. Claude Code takes a
      // non-2xx answer as a non-blocking hook error; the handler has spooled the event for replay.
      handlers.log(`http hook failed: ${(err as Error).stack ?? err}`);
      send(res, 500, { error: "recorder_error", message: `the step could not be recorded yet: ${(err as Error).message}` });
    }
  });
}
