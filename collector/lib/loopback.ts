import { timingSafeEqual } from "node:crypto";
import { createServer as createHttpServer, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http";
import { createServer, type Server, type Socket } from "node:net";

/** The header an HTTP hook proves its enrollment with (host.json `hook_secret`). */
export const HOOK_SECRET_HEADER = "x-oxagen-hook-secret";

/** The gateway path prefix that carries the enrollment's secret for a harness that cannot send a header (Stella: `/k/<secret>`). */
export const SECRET_PATH = "/k/";

/** The path the gateway serves the workspace's MCP tools at: `http://127.0.0.1:<gateway port>/mcp`. */
export const MCP_PATH = "/mcp";

export interface Listening {
  server: Server;
  close(): Promise<void>;
}

export function closer(server: Server, sockets: Set<Socket>, after?: () => void): () => Promise<void> {
  // Closing must not wait for a client that keeps its end open: every answer already went out.
  return () =>
    new Promise<void>((done) => {
      server.close(() => {
        after?.();
        done();
      });
      for (const s of sockets) s.destroy();
    });
}

export function track(sockets: Set<Socket>, socket: Socket): void {
  sockets.add(socket);
  socket.on("close", () => sockets.delete(socket));
  socket.on("error", () => socket.destroy());
}

/**
 * An HTTP server on 127.0.0.1:`port` that drops every connection from a peer that is not on
 * loopback (the hook port and the gateway). Host and Origin are each handler's to check
 * ({@link loopbackRequest}).
 */
export function listenLoopback(port: number, handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<Listening> {
  const sockets = new Set<Socket>();
  const http = createHttpServer({ maxHeaderSize: 16 * 1024 }, handle);
  // A harness keeps its connection to the gateway (and hook port) open between calls; Node's 5 s
  // would close one just as a call is sent on it (the client sees a reset it does not retry, for a
  // POST). Past a minute, and longer than clients' own idle limits (undici's 4 s), the client closes first.
  http.keepAliveTimeout = 65_000;
  const server = createServer((socket) => {
    if (!LOOPBACK.has(socket.remoteAddress ?? "")) {
      socket.destroy();
      return;
    }
    track(sockets, socket);
    // Small writes (a stream's events) go out at once, not after the peer's delayed ACK.
    socket.setNoDelay(true);
    http.emit("connection", socket);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => {
      server.off("error", reject);
      resolve({ server, close: closer(server, sockets) });
    });
  });
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "::ffff:127.0.0.1"]);

/** True for a Host or Origin naming this loopback port (stops DNS rebinding from a browser). */
function loopbackAuthority(value: string, port: number): boolean {
  const hosts = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  return hosts.includes(
    value
      .toLowerCase()
      .replace(/^https?:\/\//, "")
      .replace(/\/$/, ""),
  );
}

/** Whether a request header carries the enrollment's secret (compared in constant time). */
export function secretMatches(given: string | string[] | undefined, secret: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Whether a request may pass the enrollment's secret check: no secret is set (an enrollment from
 * before there was one), or its header carries the secret. A header that does not match the
 * secret as last read is checked again against host.json read now, so a re-enroll's new secret
 * works at once; an old one is refused within HOST_CHECK_MS (lib/state.ts).
 */
export function carriesSecret(given: string | string[] | undefined, secret: (now?: boolean) => string | null): boolean {
  const seen = secret();
  if (seen === null || secretMatches(given, seen)) return true;
  const now = secret(true);
  return now === null || secretMatches(given, now);
}

/** True when a request's Host names this loopback port and its Origin, when it has one, does too. */
export function loopbackRequest(req: IncomingMessage, port: number): boolean {
  const origin = req.headers.origin;
  return loopbackAuthority(req.headers.host ?? "", port) && (origin === undefined || loopbackAuthority(origin, port));
}

/** A JSON answer with its length (`extra`: more headers, e.g. `connection: close`). */
export function sendJson(res: ServerResponse, status: number, body: unknown, extra: OutgoingHttpHeaders = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...extra });
  res.end(text);
}
