import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { exports } from "cloudflare:workers";
import { inject } from "vitest";
import { ROUTES, signRequest } from "../../protocol/index.ts";
import { BASE, op, type TestHost } from "./support.ts";
import "./provided.ts";

/** The local upstreams (test/support/tool-upstreams.ts). */
export const upstreams = () => inject("toolUpstreams");

/** A tag of the test's own, so its upstream hits are counted apart. */
export const newTag = () => `t${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;

/** How many calls the upstreams took for a tag, and how many of them their caller abandoned. */
export async function hitsOf(tag: string): Promise<{ hits: number; aborted: number }> {
  return (await (await fetch(`${upstreams().http}/hits/${tag}`)).json()) as { hits: number; aborted: number };
}

/** Who calls the MCP endpoint in a test. */
export type TestCaller =
  | { kind: "direct"; token: string }
  | { kind: "gateway"; host: TestHost; run?: string; agent?: string; spoil?: (h: Headers) => void };

/** The MCP endpoint's URL of a workspace. */
export const mcpUrl = (workspaceId: string) => `${BASE}${ROUTES.mcp(workspaceId)}`;

/**
 * A fetch that reaches the Worker in-process: a direct client's bearer token, or a gateway's host
 * signature over the exact body and the headers it acts on (content-type, x-oxagen-run,
 * x-oxagen-agent), as the collector's gateway will send them.
 */
export function callerFetch(caller: TestCaller, extra: Record<string, string> = {}): typeof fetch {
  return async (input, init) => {
    const req = new Request(input, init);
    const body = new Uint8Array(await req.arrayBuffer());
    const headers = new Headers(req.headers);
    for (const [k, v] of Object.entries(extra)) headers.set(k, v);
    if (caller.kind === "direct") headers.set("authorization", `Bearer ${caller.token}`);
    else {
      if (caller.run) headers.set("x-oxagen-run", caller.run);
      if (caller.agent) headers.set("x-oxagen-agent", caller.agent);
      const url = new URL(req.url);
      const signed: Record<string, string | null> = {
        "content-type": headers.get("content-type"),
        "x-oxagen-run": headers.get("x-oxagen-run"),
        "x-oxagen-agent": headers.get("x-oxagen-agent"),
      };
      const auth = signRequest(caller.host.secret, {
        origin: BASE,
        method: req.method,
        pathAndQuery: url.pathname + url.search,
        hostId: caller.host.id,
        headers: signed,
        body,
      });
      for (const [k, v] of Object.entries(auth)) headers.set(k, v);
      caller.spoil?.(headers);
    }
    return exports.default.fetch(req.url, {
      method: req.method,
      headers,
      body: req.method === "GET" || req.method === "DELETE" ? undefined : body,
      signal: init?.signal ?? null,
    });
  };
}

/** The eras a test runs in: the v2 client in each negotiation mode, and the 1.x client (2025 era only). */
export const CLIENTS = ["v2-legacy", "v2-modern", "v1"] as const;
/** One of {@link CLIENTS}. */
export type ClientKind = (typeof CLIENTS)[number];

/** A connected official MCP client of the given kind. */
export async function connect(kind: ClientKind, workspaceId: string, caller: TestCaller) {
  const url = new URL(mcpUrl(workspaceId));
  if (kind === "v1") {
    const client = new ClientV1({ name: "test-v1", version: "1.0.0" });
    await client.connect(new TransportV1(url, { fetch: callerFetch(caller) }));
    return client as unknown as ClientV2;
  }
  const mode = kind === "v2-modern" ? { pin: "2026-07-28" } : ("legacy" as const);
  const client = new ClientV2({ name: "test-v2", version: "2.0.0" }, { versionNegotiation: { mode } });
  await client.connect(new TransportV2(url, { fetch: callerFetch(caller) }));
  return client;
}

/** Defines a tool through the operator API; throws with the answer when it is not created. */
export async function defineTool(token: string, tool: Record<string, unknown>) {
  const res = await op(token, "/v1/tools", { json: tool });
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status !== 201) throw new Error(`tool not created: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** Mints a tool token for an agent. */
export async function toolToken(token: string, agent: string): Promise<string> {
  const res = await op(token, "/v1/tool-tokens", { json: { agent } });
  if (res.status !== 201) throw new Error(`tool token: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { token: string }).token;
}

/** The meter rows of a workspace (newest first). */
export async function meterRows(token: string, query = ""): Promise<Record<string, unknown>[]> {
  const res = await op(token, `/v1/tool-calls${query ? `?${query}` : ""}`);
  if (res.status !== 200) throw new Error(`tool calls: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { calls: Record<string, unknown>[] }).calls;
}

/** A refunds tool of the local payments API, with a credential and an amount cap for claude-code. */
export function refundsTool(extra: Record<string, unknown> = {}) {
  return {
    name: "refund",
    description: "Refunds part of a charge.",
    input_schema: {
      type: "object",
      properties: { charge: { type: "string" }, amount: { type: "integer", minimum: 1 }, tag: { type: "string" } },
      required: ["charge", "amount", "tag"],
    },
    binding: { kind: "http", method: "POST", origin: upstreams().http, path: "/v1/charges/{charge}/refunds" },
    credential: SECRET,
    access: [
      { id: "cap", decision: "allow", agents: ["claude-code", "refunds-bot"], arguments: { amount: { maximum: 5000 } } },
      { id: "hidden", decision: "deny" },
    ],
    ...extra,
  };
}

/** The credential every test tool carries: it must never come back. */
export const SECRET = "sk_test_51HxQq2eZvKYlo2C0secretvalue";

/** Text of a result's first content block. */
export const textOf = (r: { content?: unknown }) => ((r.content as { text?: string }[] | undefined)?.[0]?.text ?? "") as string;

/** Sets the workspace's budget clauses (the rest of its policy at defaults). */
export async function setBudgets(token: string, workspaceId: string, budgets: unknown[]) {
  const policy = {
    mode: "enforce",
    tools: [],
    default_tool_decision: "none",
    models: null,
    budgets,
    retention: { mode: "keep", keep: [] },
  };
  const res = await op(token, `/v1/workspaces/${workspaceId}/policy`, { method: "PUT", json: policy });
  if (res.status !== 200) throw new Error(`policy: ${res.status} ${await res.text()}`);
}
