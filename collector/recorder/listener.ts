import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer, type Server, type Socket } from "node:net";

/** The most a request (line or HTTP body) may carry. */
export const MAX_REQUEST_BYTES = 16 * 1024 * 1024;

export interface ListenerHandlers {
  /** One line-protocol request (already parsed JSON); returns the answer object. */
  line(request: unknown): unknown;
  /** One HTTP hook (the harness's payload) for a harness label; returns the hook answer. */
  http(label: string, payload: unknown): unknown;
  /** What GET /healthz reports. */
  health(): unknown;
  log(msg: string): void;
}

export interface Listening {
  server: Server;
  close(): Promise<void>;
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

/**
 * One loopback port for both wires: the line protocol of `tacho hook` (first byte `{`) and
 * HTTP hooks (anything else). Peers that are not loopback are closed unanswered.
 */
export function listen(port: number, handlers: ListenerHandlers): Promise<Listening> {
  const sockets = new Set<Socket>();
  const http = createHttpServer({ maxHeaderSize: 16 * 1024 }, (req, res) => onHttp(req, res, port, handlers));
  const server = createServer({ pauseOnConnect: false }, (socket) => {
    if (!LOOPBACK.has(socket.remoteAddress ?? "")) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    socket.once("data", (first: Buffer) => {
      const c = first.find((b) => b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09);
      if (c === 0x7b) onLine(socket, first, handlers);
      else {
        socket.pause();
        socket.unshift(first);
        http.emit("connection", socket);
        socket.resume();
      }
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => {
      server.off("error", reject);
      resolve({
        server,
        // Closing must not wait for a client that keeps its end open: every answer already went out.
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            for (const s of sockets) s.destroy();
          }),
      });
    });
  });
}

function onLine(socket: Socket, first: Buffer, handlers: ListenerHandlers): void {
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
      reply({ v: 1, answer: {}, error: "request too large" });
      return;
    }
    if (nl < 0) return;
    socket.off("data", take);
    let request: unknown;
    try {
      request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      reply({ v: 1, answer: {}, error: "request is not JSON" });
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
  take(first);
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), connection: "close" });
  res.end(text);
}

function onHttp(req: IncomingMessage, res: ServerResponse, port: number, handlers: ListenerHandlers): void {
  const host = req.headers.host ?? "";
  const origin = req.headers.origin;
  if (!loopbackAuthority(host, port) || (origin !== undefined && !loopbackAuthority(origin, port))) {
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
      handlers.log(`http hook failed: ${(err as Error).stack ?? err}`);
      send(res, 200, {});
    }
  });
}
