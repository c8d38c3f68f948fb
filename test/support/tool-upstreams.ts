// Local upstreams for workspace tools, in Node on 127.0.0.1: a payments-like HTTP API and an
// upstream MCP server built on the official SDK (`@modelcontextprotocol/sdk` 1.x, stateless
// Streamable HTTP). Every call is counted per tag (a test's own), so a test can tell whether a
// refused call reached the upstream. Both echo the Authorization header they got, so a test can
// show the server scrubs the credential from what comes back.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

/** What a test reaches the upstreams at. */
export interface ToolUpstreams {
  /** The HTTP API's origin. */
  http: string;
  /** The upstream MCP server's base: `${mcp}/<variant>` serves one variant's definitions. */
  mcp: string;
  close: () => Promise<void>;
}

const hits = new Map<string, number>();
const aborted = new Map<string, number>();
const count = (m: Map<string, number>, tag: string) => m.set(tag, (m.get(tag) ?? 0) + 1);
/** Per variant: the `lookup` tool's description (changed by a test to make the definition drift). */
const descriptions = new Map<string, string>();

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

const json = (res: http.ServerResponse, status: number, value: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
};

/** Waits until the request's client goes away (counted as aborted for `tag`). */
const untilClosed = (res: http.ServerResponse, tag: string) =>
  new Promise<void>((resolve) =>
    res.on("close", () => {
      count(aborted, tag);
      resolve();
    }),
  );

async function api(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://x");
  const parts = url.pathname.split("/").filter(Boolean);
  if (parts[0] === "hits") return json(res, 200, { hits: hits.get(parts[1]!) ?? 0, aborted: aborted.get(parts[1]!) ?? 0 });
  const text = await readBody(req);
  const body = text ? (JSON.parse(text) as Record<string, unknown>) : null;
  const tag = String(body?.tag ?? url.searchParams.get("tag") ?? "none");
  count(hits, tag);
  if (parts[0] === "slow") return untilClosed(res, tag);
  if (parts[0] === "big") return json(res, 200, { blob: "x".repeat(Number(url.searchParams.get("n") ?? "100000")) });
  if (parts[0] === "fail") return json(res, 500, { error: "upstream failed", auth: req.headers.authorization ?? null });
  if (parts[0] === "redirect") {
    res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data" });
    return void res.end();
  }
  // /v1/charges/<charge>/refunds: echoes what it got, the credential included.
  return json(res, 200, {
    method: req.method,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    body,
    auth: req.headers.authorization ?? null,
  });
}

function mcpServer(variant: string, auth: string | null): McpServer {
  const server = new McpServer({ name: "upstream", version: "1.0.0" });
  server.registerTool(
    "lookup",
    {
      description: descriptions.get(variant) ?? "Looks up a customer by id.",
      inputSchema: { customer: z.string(), tag: z.string() },
    },
    async ({ customer, tag }) => {
      count(hits, tag);
      return { content: [{ type: "text", text: JSON.stringify({ customer, found: true, auth }) }] };
    },
  );
  server.registerTool(
    "progress",
    { description: "Reports progress, then answers.", inputSchema: { steps: z.number().int(), tag: z.string() } },
    async ({ steps, tag }, extra) => {
      count(hits, tag);
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        if (token !== undefined)
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i, total: steps } });
      }
      return { content: [{ type: "text", text: `done after ${steps} steps` }] };
    },
  );
  server.registerTool(
    "slow",
    { description: "Answers when the caller gives up.", inputSchema: { tag: z.string() } },
    async ({ tag }, extra) => {
      count(hits, tag);
      await new Promise<void>((resolve) => {
        if (extra.signal.aborted) return resolve();
        extra.signal.addEventListener("abort", () => resolve());
      });
      count(aborted, tag);
      return { content: [{ type: "text", text: "too late" }] };
    },
  );
  return server;
}

async function mcp(req: http.IncomingMessage, res: http.ServerResponse, variant: string): Promise<void> {
  if (req.method !== "POST") return json(res, 405, { error: "POST only" });
  const body = JSON.parse(await readBody(req)) as unknown;
  const server = mcpServer(variant, req.headers.authorization ?? null);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

/** Starts both upstreams on free loopback ports. */
export async function startToolUpstreams(): Promise<ToolUpstreams> {
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const [first, second] = path.split("/").filter(Boolean);
    const done = (err: unknown) => {
      if (!res.headersSent) json(res, 500, { error: String(err) });
    };
    if (first === "describe" && second) {
      // POST /describe/<variant> with the new description as the body: the upstream's definition drifts.
      void readBody(req).then((text) => {
        descriptions.set(second, text);
        json(res, 200, { variant: second, description: text });
      }, done);
      return;
    }
    if (first === "mcp" && second) return void mcp(req, res, second).catch(done);
    void api(req, res).catch(done);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    http: base,
    mcp: `${base}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
