import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OperatorApi, type Credentials } from "../../collector/lib/operator.ts";

// A server that pages its hosts two at a time, whatever limit is asked for (as a server may cap it).
const HOSTS = Array.from({ length: 5 }, (_, i) => ({ id: `h-${i}` }));
let server: Server;
let url: string;
const asked: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    asked.push(u.search);
    const from = u.searchParams.get("cursor") ? HOSTS.findIndex((h) => h.id === u.searchParams.get("cursor")) + 1 : 0;
    const page = HOSTS.slice(from, from + 2);
    const next = from + 2 < HOSTS.length ? page.at(-1)!.id : null;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ hosts: page, next, registered: from === 0 ? ["first page only"] : [] }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("an operator command's paged list", () => {
  it("reads every page by its cursor: a workspace of more hosts than a page lists them all", async () => {
    const creds = { server: url, token: "oxo_x" } as Credentials;
    const all = await new OperatorApi(creds, "oxagen computers").allPages<"hosts", { hosts: { id: string }[]; registered: string[] }>(
      "/v1/hosts",
      "hosts",
    );
    expect(all.hosts.map((h) => h.id)).toEqual(HOSTS.map((h) => h.id));
    expect(all.registered).toEqual(["first page only"]);
    expect(asked).toEqual(["?limit=500", "?limit=500&cursor=h-1", "?limit=500&cursor=h-3"]);
  });
});
