// What bench:gateway's reference proxies share: the upstream's request options, and serving on a
// free loopback port (printed on stdout for the bench), with no Nagle delay, until SIGTERM.
import { Agent, type IncomingMessage, type RequestOptions, type Server } from "node:http";

const agent = new Agent({ keepAlive: true, noDelay: true });

/** The request to the upstream `target` for a request the proxy received. */
export function upstreamOptions(target: URL, req: IncomingMessage): RequestOptions {
  return {
    host: target.hostname,
    port: target.port,
    path: req.url,
    method: req.method,
    headers: { ...req.headers, host: target.host },
    agent,
  };
}

export function serve(server: Server): void {
  server.on("connection", (socket) => socket.setNoDelay(true));
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    console.log(typeof address === "object" && address ? address.port : 0);
  });
  process.on("SIGTERM", () => process.exit(0));
}
