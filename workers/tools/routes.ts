import { and, asc, eq } from "drizzle-orm";
import { Hono } from "hono";
import { z } from "zod";
import { AgentName, HostId, RunId, Sha256Hex, ToolCallId, ToolName } from "../../protocol/index.ts";
import { type OperatorEnv, operatorAuth } from "../auth/operator.ts";
import { db, schema } from "../db/client.ts";
import { workspaceObject } from "../lib/policy-store.ts";
import { valid } from "../validate.ts";
import { checkUpstream } from "./drift.ts";
import { ToolInput, ToolPatch } from "./schema.ts";
import { ownTool, readTool, toolView } from "./store.ts";
import { listToolTokens, mintToolToken, revokeToolToken, ToolTokenRequest } from "./tokens.ts";
import { approveDefinition, createTool, HttpDefinitionInput, patchTool } from "./write.ts";

const NameParam = z.object({ name: ToolName });

/** Operator: the workspace's tools (docs/api.md "Workspace tools"). No answer ever carries a credential. */
const toolsApp = new Hono<OperatorEnv>()
  .use("/v1/tools", operatorAuth)
  .use("/v1/tools/*", operatorAuth)
  .post("/v1/tools", valid("json", ToolInput, { what: "tool", empty: "refused" }), async (c) => {
    const tool = await createTool(c.env, c.var.workspaceId, c.req.valid("json"), c.var.tokenId);
    return c.json(toolView(tool), 201);
  })
  .get("/v1/tools", async (c) => {
    const t = schema.tools;
    const rows = await db(c.env).select().from(t).where(eq(t.workspaceId, c.var.workspaceId)).orderBy(asc(t.name)).all();
    return c.json({ tools: rows.map((r) => toolView(readTool(r))) });
  })
  .get("/v1/tools/:name", valid("param", NameParam), async (c) => {
    return c.json(toolView(await ownTool(c.env, c.var.workspaceId, c.req.valid("param").name)));
  })
  .patch("/v1/tools/:name", valid("param", NameParam), valid("json", ToolPatch, { what: "tool change", empty: "refused" }), async (c) => {
    const tool = await patchTool(c.env, c.var.workspaceId, c.req.valid("param").name, c.req.valid("json"));
    return c.json(toolView(tool));
  })
  .put(
    "/v1/tools/:name/definition",
    valid("param", NameParam),
    valid("json", HttpDefinitionInput, { what: "definition", empty: "refused" }),
    async (c) => {
      const next = { http: c.req.valid("json") };
      return c.json(toolView(await approveDefinition(c.env, c.var.workspaceId, c.req.valid("param").name, c.var.tokenId, next)));
    },
  )
  .post(
    "/v1/tools/:name/approve",
    valid("param", NameParam),
    valid("json", z.strictObject({ sha256: Sha256Hex }), { what: "approval", empty: "refused" }),
    async (c) => {
      const next = { mcpSha256: c.req.valid("json").sha256 };
      return c.json(toolView(await approveDefinition(c.env, c.var.workspaceId, c.req.valid("param").name, c.var.tokenId, next)));
    },
  )
  .post("/v1/tools/:name/check", valid("param", NameParam), async (c) => {
    const tool = await ownTool(c.env, c.var.workspaceId, c.req.valid("param").name);
    const result = await checkUpstream(c.env, tool, Date.now());
    return c.json({ result, tool: toolView(await ownTool(c.env, c.var.workspaceId, tool.row.name)) });
  })
  .delete("/v1/tools/:name", valid("param", NameParam), async (c) => {
    const name = c.req.valid("param").name;
    const tool = await ownTool(c.env, c.var.workspaceId, name);
    await db(c.env)
      .delete(schema.tools)
      .where(and(eq(schema.tools.id, tool.row.id), eq(schema.tools.workspaceId, c.var.workspaceId)));
    return c.json({ name, deleted: true });
  });

/** Operator: tokens for agents that call the MCP endpoint directly. */
const toolTokensApp = new Hono<OperatorEnv>()
  .use("/v1/tool-tokens", operatorAuth)
  .use("/v1/tool-tokens/*", operatorAuth)
  .post("/v1/tool-tokens", valid("json", ToolTokenRequest, { what: "tool token request", empty: "refused" }), async (c) =>
    c.json(await mintToolToken(c.env, c.var.workspaceId, c.req.valid("json"), c.var.tokenId), 201),
  )
  .get("/v1/tool-tokens", async (c) => c.json({ tokens: await listToolTokens(c.env, c.var.workspaceId) }))
  .delete("/v1/tool-tokens/:id", valid("param", z.object({ id: z.string().regex(/^[0-9a-f]{16}$/) })), async (c) => {
    const { id } = c.req.valid("param");
    await revokeToolToken(c.env, c.var.workspaceId, id);
    return c.json({ id, revoked: true });
  });

/** `GET /v1/tool-calls`: the meter log, newest first; `before` (a call id) pages on. */
export const ToolCallQuery = z.strictObject({
  tool: ToolName.optional(),
  status: z.enum(["refused", "reserved", "ok", "error", "cancelled", "lost"]).optional(),
  run: RunId.optional(),
  host: HostId.optional(),
  agent: AgentName.optional(),
  caller: z.enum(["gateway", "direct"]).optional(),
  since_ms: z.coerce.number().int().nonnegative().optional(),
  before: ToolCallId.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

/** Operator: the meter log (one row per call, outside every run's chain). */
const toolCallsApp = new Hono<OperatorEnv>()
  .use("/v1/tool-calls", operatorAuth)
  .get("/v1/tool-calls", valid("query", ToolCallQuery), async (c) => {
    const q = c.req.valid("query");
    const calls = await workspaceObject(c.env, c.var.workspaceId).toolCalls(q);
    const next = calls.length === q.limit ? calls[calls.length - 1]!.id : null;
    return c.json({ calls, next_before: next });
  });

/** The operator API of workspace tools: tools, tool tokens, tool calls. */
export const tools = new Hono<OperatorEnv>().route("/", toolsApp).route("/", toolTokensApp).route("/", toolCallsApp);
