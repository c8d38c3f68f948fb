import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { nodeFetch } from "../../collector/lib/node-fetch.ts";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function serve(handler: RequestListener): Promise<URL> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
}

const init = (over: Partial<Parameters<typeof nodeFetch>[1]> = {}) => ({
  method: "GET",
  headers: {},
  signal: AbortSignal.timeout(10_000),
  ...over,
});

describe("nodeFetch, the host's requests on node:http", () => {
  it("sends the method, headers and body, and answers with the status, headers and whole body as fetch does", async () => {
    let seen: { method?: string; type?: string; length?: string; body: string } = { body: "" };
    const url = await serve((req, res) => {
      let body = "";
      req.on("data", (c) => {
        body += c;
      });
      req.on("end", () => {
        seen = { method: req.method, type: req.headers["content-type"], length: req.headers["content-length"], body };
        res.writeHead(202, { "content-type": "application/json", "set-cookie": ["a=1", "b=2"], "x-one": "1" });
        res.write('{"accepted":');
        res.end("true}");
      });
    });
    const body = new TextEncoder().encode('{"frames":[1,2]}');
    const res = await nodeFetch(
      new URL("/v1/ingest?x=1", url),
      init({ method: "POST", headers: { "content-type": "application/json" }, body }),
    );
    expect(seen).toEqual({ method: "POST", type: "application/json", length: String(body.length), body: '{"frames":[1,2]}' });
    expect(res.status).toBe(202);
    expect(res.ok).toBe(true);
    expect(res.headers.get("x-one")).toBe("1");
    expect(res.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(await res.json()).toEqual({ accepted: true });
  });

  it("answers a 204 and a 304 without a body, and a refusal with its own body", async () => {
    const url = await serve((req, res) => {
      if (req.url === "/none") return res.writeHead(204).end();
      if (req.url === "/same") return res.writeHead(304, { etag: '"e1"' }).end();
      res.writeHead(429, { "retry-after": "3" }).end("slow down");
    });
    const none = await nodeFetch(new URL("/none", url), init());
    expect([none.status, none.body]).toEqual([204, null]);
    const same = await nodeFetch(new URL("/same", url), init());
    expect([same.status, same.headers.get("etag"), same.body]).toEqual([304, '"e1"', null]);
    const refused = await nodeFetch(new URL("/", url), init());
    expect([refused.status, refused.ok, refused.headers.get("retry-after"), await refused.text()]).toEqual([429, false, "3", "slow down"]);
  });

  it("rejects with the signal's reason when it fires, a TimeoutError for a timeout, as fetch does", async () => {
    const url = await serve(() => {});
    const timedOut = nodeFetch(url, init({ signal: AbortSignal.timeout(50) }));
    await expect(timedOut).rejects.toMatchObject({ name: "TimeoutError" });
    const controller = new AbortController();
    const aborted = nodeFetch(url, init({ signal: controller.signal }));
    controller.abort(new Error("the recorder stops"));
    await expect(aborted).rejects.toThrow("the recorder stops");
  });

  it("rejects with the signal's reason when it fires in the middle of the answer's body", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("the first part");
    });
    await expect(nodeFetch(url, init({ signal: AbortSignal.timeout(100) }))).rejects.toMatchObject({ name: "TimeoutError" });
  });

  it("rejects an answer whose status a Response cannot hold, rather than throwing where no caller catches it", async () => {
    const url = await serve((_req, res) => res.writeHead(999).end("x"));
    await expect(nodeFetch(url, init())).rejects.toThrow("the server answered with HTTP status 999, outside 200-599");
  });

  it("rejects when the server cannot be reached, or closes the connection before the answer's end", async () => {
    const closed = await serve(() => {});
    const port = closed.port;
    await new Promise((r) => servers.pop()?.close(r));
    await expect(nodeFetch(new URL(`http://127.0.0.1:${port}/`), init())).rejects.toThrow(/ECONNREFUSED/);
    const cut = await serve((_req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("partial");
      setImmediate(() => res.socket?.destroy());
    });
    await expect(nodeFetch(cut, init())).rejects.toThrow("the server closed the connection before the answer's end");
  });
});
