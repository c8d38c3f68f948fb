// A bare loopback HTTP proxy for bench:gateway's second reference: forwards each request to the
// upstream given as argv[2] and pipes the answer back, nothing read, metered or recorded; the cost of
// one more process on the path, which any local proxy pays. Prints its port on stdout.
import { Agent, createServer, request } from "node:http";

const target = new URL(process.argv[2]!);
const agent = new Agent({ keepAlive: true, noDelay: true });
const server = createServer((req, res) => {
  const up = request(
    { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host }, agent },
    (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    },
  );
  up.on("error", () => res.destroy());
  req.pipe(up);
});
server.on("connection", (socket) => socket.setNoDelay(true));
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  console.log(typeof address === "object" && address ? address.port : 0);
});
process.on("SIGTERM", () => process.exit(0));
