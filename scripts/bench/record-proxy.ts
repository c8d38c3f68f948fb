// The floor for bench:gateway's CPU per call: the bare proxy (pipe-proxy.ts) plus the least any
// recorder that keeps the record must do per call. It hashes the request and response bodies with
// SHA-256 as they pass, and at the response's end appends one small JSON frame and the two bodies to
// a file, written and fsync'd once per group commit, as the journal batches. It does no redaction,
// policy, signing, chaining or shipping, and it answers before the fsync, as the gateway does.
// argv[2] is the upstream and argv[3] the file. Prints its port on stdout.
import { createHash } from "node:crypto";
import { fsync, openSync, writev } from "node:fs";
import { createServer, request } from "node:http";
import { serve, upstreamOptions } from "./loopback.ts";

const target = new URL(process.argv[2]!);
const fd = openSync(process.argv[3]!, "a", 0o600);

let pending: Buffer[] = [];
let flushing = false;
let scheduled = false;
function append(parts: Buffer[]): void {
  pending.push(...parts);
  if (!scheduled && !flushing) {
    scheduled = true;
    setImmediate(flush);
  }
}
// One write and one fsync for every frame appended since the last one; frames appended meanwhile go in the next.
function flush(): void {
  scheduled = false;
  if (!pending.length) return;
  flushing = true;
  const batch = pending;
  pending = [];
  writev(fd, batch, (err) => {
    if (err) throw err;
    fsync(fd, (err) => {
      if (err) throw err;
      flushing = false;
      flush();
    });
  });
}

let seq = 0;
const server = createServer((req, res) => {
  const reqHash = createHash("sha256");
  const reqChunks: Buffer[] = [];
  req.on("data", (c: Buffer) => {
    reqHash.update(c);
    reqChunks.push(c);
  });
  const up = request(upstreamOptions(target, req), (ur) => {
    res.writeHead(ur.statusCode ?? 502, ur.headers);
    const resHash = createHash("sha256");
    const resChunks: Buffer[] = [];
    ur.on("data", (c: Buffer) => {
      resHash.update(c);
      resChunks.push(c);
    });
    ur.on("end", () => {
      const reqBody = Buffer.concat(reqChunks);
      const resBody = Buffer.concat(resChunks);
      const frame = JSON.stringify({
        seq: ++seq,
        t: Date.now(),
        status: ur.statusCode,
        req: { sha256: reqHash.digest("hex"), bytes: reqBody.length },
        res: { sha256: resHash.digest("hex"), bytes: resBody.length },
      });
      append([Buffer.from(`${frame}\n`), reqBody, resBody]);
    });
    ur.pipe(res);
  });
  up.on("error", () => res.destroy());
  req.pipe(up);
});
serve(server);
