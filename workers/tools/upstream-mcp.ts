import { Client, type Tool as McpTool, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { toolDefinitionDigest } from "../../protocol/index.ts";
import { EgressRefused, egressProblem, guardedFetch } from "./egress.ts";
import type { McpBinding } from "./schema.ts";
import type { Definition } from "./store.ts";

/** The most pages of an upstream's `tools/list` read when looking for one tool. */
const MAX_PAGES = 20;

/** What the Worker sends an upstream MCP server: its binding, the credential header (if any), the egress rule. */
export interface UpstreamContext {
  binding: McpBinding;
  headers: Record<string, string>;
  /** Every form of the credential the headers carry, to scrub from what comes back (none without one). */
  credentialForms: string[];
  allowLoopback: boolean;
  version: string;
}

/** Connects to the upstream (either protocol revision: `auto` negotiation), runs `fn`, and closes. */
async function withUpstream<T>(u: UpstreamContext, signal: AbortSignal, fn: (client: Client) => Promise<T>): Promise<T> {
  const url = new URL(u.binding.url);
  const problem = egressProblem(url, u.allowLoopback);
  if (problem) throw new EgressRefused(problem);
  const transport = new StreamableHTTPClientTransport(url, {
    fetch: guardedFetch(u.allowLoopback),
    requestInit: { headers: u.headers, redirect: "manual" },
  });
  const client = new Client({ name: "oxagen", version: u.version }, { versionNegotiation: { mode: "auto" } });
  await client.connect(transport, { signal, timeout: u.binding.timeout_ms });
  try {
    return await fn(client);
  } finally {
    await client.close().catch(() => undefined);
  }
}

async function findTool(client: Client, name: string, signal: AbortSignal, timeout: number): Promise<McpTool | null> {
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await client.listTools(cursor ? { cursor } : undefined, { signal, timeout });
    const tool = res.tools.find((t) => t.name === name);
    if (tool) return tool;
    if (!res.nextCursor) return null;
    cursor = res.nextCursor;
  }
  return null;
}

/** An upstream tool's definition as it lists it now, with its digest; null when it no longer lists it. */
export interface UpstreamDefinition {
  tool: Record<string, unknown>;
  sha256: string;
}

function pin(tool: McpTool): UpstreamDefinition {
  const { _meta: _m, ...rest } = tool as McpTool & { _meta?: unknown };
  return { tool: rest, sha256: toolDefinitionDigest(rest).sha256 };
}

/** Reads the upstream's definition of the bound tool. */
export async function upstreamDefinition(u: UpstreamContext, signal: AbortSignal): Promise<UpstreamDefinition | null> {
  return withUpstream(u, signal, async (client) => {
    const tool = await findTool(client, u.binding.tool, signal, u.binding.timeout_ms);
    return tool ? pin(tool) : null;
  });
}

/** The definition Oxagen serves for an upstream tool: its own name, the upstream's description, schema and annotations. */
export function servedFromUpstream(name: string, upstream: Record<string, unknown>): Definition {
  return {
    name,
    ...(typeof upstream.title === "string" ? { title: upstream.title } : {}),
    description: typeof upstream.description === "string" ? upstream.description : "",
    inputSchema: (upstream.inputSchema as Record<string, unknown> | undefined) ?? { type: "object" },
    ...(upstream.annotations && typeof upstream.annotations === "object"
      ? { annotations: upstream.annotations as Record<string, unknown> }
      : {}),
  };
}

/** How an upstream call went: its result, or that its definition no longer is the approved one (checked on every use). */
export type UpstreamCall = { drift: UpstreamDefinition | null } | { result: Record<string, unknown> };

/**
 * Calls the bound tool, after checking on the same connection that the upstream still lists it
 * with the approved definition (`pinned`): when it does not, nothing is called. Progress the
 * upstream reports goes to `onprogress`.
 */
export async function callUpstream(
  u: UpstreamContext,
  pinned: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
  onprogress?: (p: { progress: number; total?: number; message?: string }) => void,
): Promise<UpstreamCall> {
  return withUpstream(u, signal, async (client) => {
    const tool = await findTool(client, u.binding.tool, signal, u.binding.timeout_ms);
    const live = tool ? pin(tool) : null;
    if (!live || live.sha256 !== pinned) return { drift: live };
    const result = await client.callTool(
      { name: u.binding.tool, arguments: args },
      { signal, timeout: u.binding.timeout_ms, ...(onprogress ? { onprogress, resetTimeoutOnProgress: false } : {}) },
    );
    return { result: result as unknown as Record<string, unknown> };
  });
}
