// A bare loopback HTTP proxy for bench:gateway's second reference: forwards each request to the
// upstream given as argv[2] and pipes the answer back, nothing read, metered or recorded; the cost of
// one more process on the path, which any local proxy pays. Prints its port on stdout.
import { createServer, request } from "node:http";
import { serve, upstreamOptions } from "./loopback.ts";

const target = new URL(process.argv[2]!);
const server = createServer((req, res) => {
  const up = request(upstreamOptions(target, req), (ur) => {
    res.writeHead(ur.statusCode ?? 502, ur.headers);
    ur.pipe(res);
  });
  up.on("error", () => res.destroy());
  req.pipe(up);
});
serve(server);
