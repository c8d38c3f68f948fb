import { createMcpHandler, Server } from "@modelcontextprotocol/server";
import { type Context, Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { z } from "zod";
import {
  AgentName,
  AUTH_HEADERS,
  MAX_MCP_REQUEST_BYTES,
  type Policy,
  ROUTES,
  RunId,
  signToolCatalog,
  TOOL_META,
} from "../../protocol/index.ts";
import { type HostEnv, hostAuth, serverOrigin } from "../auth/host.ts";
import { AppError, notFound } from "../errors.ts";
import { signingKey } from "../keys.ts";
import { hostPolicy } from "../lib/host-policy.ts";
import { workspaceObject } from "../lib/policy-store.ts";
import { valid } from "../validate.ts";
import { type Caller, clauseFor, narrowedSchema } from "./access.ts";
import { callTool, type McpScope } from "./call.ts";
import { servedTools, type StoredTool } from "./store.ts";
import { checkToolToken } from "./tokens.ts";

/** The endpoint's Hono env: the caller, set once it is authenticated. */
export type McpEnv = { Bindings: Env; Variables: HostEnv["Variables"] & { caller: Caller } };

/** The gateway's headers besides the host signature (both covered by it). */
const GatewayHeaders = z.object({
  "x-oxagen-run": RunId.optional(),
  "x-oxagen-agent": AgentName.optional(),
});

const once = <T>(f: () => Promise<T>) => {
  let p: Promise<T> | null = null;
  return () => {
    p ??= f();
    return p;
  };
};

/**
 * Host and Origin (DNS rebinding, browsers): the request must be addressed to this server's own
 * origin (OXAGEN_ORIGIN), and a present Origin must be that origin too (no browser page of another
 * site may call it).
 */
const sameOrigin = createMiddleware<McpEnv>(async (c, next) => {
  const origin = serverOrigin(c.env);
  if (new URL(c.req.url).origin !== origin)
    throw new AppError(403, "wrong_host", `This endpoint answers requests addressed to ${origin} only.`);
  const from = c.req.header("origin");
  if (from !== undefined && from !== origin)
    throw new AppError(403, "origin_refused", "Requests from a browser page of another origin are refused.");
  await next();
});

/** A direct client's policy: the workspace's, with its workspace-wide agent pauses and the workspace's exhausted budgets (the WorkspaceObject's copies, as a host's policy reads them). */
async function directPolicy(env: Env, workspaceId: string, now: number): Promise<Policy> {
  const ws = await workspaceObject(env, workspaceId).policyPart("", now);
  return {
    ...ws.policy,
    paused_agents: ws.pausedAgents,
    exhausted_budgets: ws.exhausted.scopes.filter((s) => s.host === null).map(({ host: _h, ...b }) => b),
  };
}

/**
 * Who calls: a direct client with a tool token (`Authorization: Bearer oxt_…`, its calls in the
 * meter log only), or a gateway signing as its host (a suspended one too: its calls are refused
 * as `suspended_host`), naming its run and agent. Either must belong to the path's workspace.
 */
const callerAuth = createMiddleware<McpEnv>(async (c, next) => {
  const workspaceId = c.req.param("workspace");
  const bearer = /^Bearer (\S+)$/.exec(c.req.header("authorization") ?? "");
  if (bearer) {
    const token = await checkToolToken(c.env, bearer[1]!, Date.now());
    if (token.workspaceId !== workspaceId) throw notFound("workspace");
    c.set("caller", { kind: "direct", hostId: null, agent: token.agent, runId: null, tokenId: token.id });
    return next();
  }
  if (!c.req.header(AUTH_HEADERS.host)) {
    c.header("WWW-Authenticate", 'Bearer realm="oxagen"');
    throw new AppError(401, "unauthorized", "A tool token (Authorization: Bearer oxt_…) or a host signature is required.");
  }
  return hostAuth({ suspended: "allowed" })(c as unknown as Context<HostEnv>, async () => {
    const host = c.var.host;
    if (host.workspaceId !== workspaceId) throw notFound("workspace");
    const runId = c.req.header("x-oxagen-run") ?? null;
    // The run's ChainObject says whose it is (no D1 read per call; a run the projection has not written yet is known too).
    if (runId) {
      const owner = await c.env.CHAINS.get(c.env.CHAINS.idFromName(runId)).owner();
      if (owner !== null && owner !== host.id) throw notFound("run");
    }
    c.set("caller", { kind: "gateway", hostId: host.id, agent: c.req.header("x-oxagen-agent") ?? null, runId, tokenId: null });
    await next();
  });
});

/** What a caller is shown: each tool it may use, its input schema narrowed by the clause that lets it. */
function listed(tools: StoredTool[], caller: Caller): Record<string, unknown>[] {
  return tools.flatMap((t) => {
    const clause = clauseFor(t.access, caller);
    if (clause?.decision !== "allow") return [];
    return [{ ...t.definition, inputSchema: narrowedSchema(t.definition.inputSchema, clause) }];
  });
}

/** One server per request (the SDK's stateless idiom), serving the caller's catalog and calls. */
function serverFor(scope: McpScope): Server {
  const server = new Server({ name: "oxagen", version: scope.env.OXAGEN_VERSION }, { capabilities: { tools: {} } });
  server.setRequestHandler("tools/list", async () => {
    const [tools, key] = await Promise.all([scope.tools(), signingKey(scope.env)]);
    const shown = listed(tools, scope.caller);
    const { kind, hostId, agent, runId } = scope.caller;
    const catalog = signToolCatalog(
      { workspace: scope.workspaceId, caller: { kind, host: hostId, agent, run: runId }, issued_ms: Date.now() },
      shown,
      key.secret,
      key.keyId,
    );
    return { tools: shown, _meta: { [TOOL_META.catalog]: catalog } } as never;
  });
  server.setRequestHandler("tools/call", async (req, ctx) => {
    const token = req.params._meta?.progressToken;
    const progress =
      token === undefined
        ? undefined
        : (p: { progress: number; total?: number; message?: string }) =>
            void ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, ...p } }).catch(() => undefined);
    const args = (req.params.arguments ?? {}) as Record<string, unknown>;
    return (await callTool(scope, req.params.name, args, { signal: ctx.mcpReq.signal, progress })) as never;
  });
  return server;
}

const handler = createMcpHandler((ctx) => serverFor(ctx.authInfo?.extra?.scope as McpScope), {
  legacy: "stateless",
  maxRequestBodySize: MAX_MCP_REQUEST_BYTES,
  onerror: (err) => console.error("mcp endpoint error", err.message),
});

/**
 * The workspace's hosted MCP endpoint (docs/api.md "The MCP endpoint"): stateless Streamable
 * HTTP on the official SDK's `createMcpHandler`, which serves 2026-07-28 clients and, per request,
 * 2025-era ones (`initialize` included). POST only: there is no session to GET or DELETE.
 */
export const mcpEndpoint = new Hono<McpEnv>()
  .on(["GET", "DELETE"], ROUTES.mcp.pattern, (c) => {
    c.header("Allow", "POST");
    return c.json({ error: "method_not_allowed", message: "This MCP endpoint is stateless: POST each message." }, 405);
  })
  .post(ROUTES.mcp.pattern, sameOrigin, valid("header", GatewayHeaders), callerAuth, async (c) => {
    const workspaceId = c.req.param("workspace");
    const caller = c.var.caller;
    const host = caller.kind === "gateway" ? c.var.host : null;
    const scope: McpScope = {
      env: c.env,
      workspaceId,
      caller,
      tools: once(() => servedTools(c.env, workspaceId)),
      policy: once(() => (host ? hostPolicy(c.env, host, Date.now()) : directPolicy(c.env, workspaceId, Date.now()))),
      waitUntil: (p) => c.executionCtx.waitUntil(p.catch((err: unknown) => console.error("mcp endpoint: settling failed", err))),
    };
    const raw = c.req.raw;
    const request = new Request(raw.url, {
      method: "POST",
      headers: raw.headers,
      body: c.var.body.length > 0 ? c.var.body : null,
      signal: raw.signal,
    });
    return handler.fetch(request, {
      authInfo: { token: "", clientId: caller.tokenId ?? caller.hostId ?? "", scopes: [], extra: { scope } },
    });
  });
