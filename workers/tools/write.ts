import { and, count, eq } from "drizzle-orm";
import { z } from "zod";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { newId } from "../lib/tokens.ts";
import { schemaProblem, unknownArguments } from "./access.ts";
import { scrub, sealCredential } from "./credential.ts";
import { upstreamOf, upstreamOfTool } from "./drift.ts";
import { egressProblem, loopbackAllowed } from "./egress.ts";
import { type AccessClause, type Binding, MAX_TOOLS, type ToolInput, type ToolPatch } from "./schema.ts";
import { type Definition, definitionSha256, ownTool, readTool, type StoredTool } from "./store.ts";
import { servedFromUpstream, type UpstreamContext, upstreamDefinition } from "./upstream-mcp.ts";

const invalid = (message: string) => new AppError(400, "invalid_tool", message);

/**
 * The upstream's definition of the bound tool, or a 502 naming why it could not be read, the
 * credential scrubbed from the reason (an upstream may echo it in an error body), so neither the
 * answer nor a log line carries it.
 */
async function listedUpstream(u: UpstreamContext, timeoutMs: number) {
  try {
    return await upstreamDefinition(u, AbortSignal.timeout(timeoutMs));
  } catch (cause) {
    const why = scrub(cause instanceof Error ? cause.message : String(cause), u.credentialForms).text;
    throw new AppError(502, "upstream_unreachable", `The upstream MCP server did not list its tools: ${why}.`);
  }
}

/** Refuses a binding whose upstream a tool may not call (SSRF), or whose arguments cannot be placed. */
function checkBinding(env: Env, b: Binding): void {
  const url = new URL(b.kind === "http" ? b.origin : b.url);
  const problem = egressProblem(url, loopbackAllowed(env));
  if (problem) throw invalid(`The tool's upstream ${url.origin} is refused: ${problem}.`);
  if (b.kind === "http") {
    const inPath = new Set([...b.path.matchAll(/\{([A-Za-z0-9_.-]+)\}/g)].map((m) => m[1]!));
    for (const [name, p] of Object.entries(b.args))
      if (p.in === "path" && !inPath.has(name)) throw invalid(`The argument ${name} goes in the path, but the path has no {${name}}.`);
  }
}

/** Refuses a definition the endpoint could not serve: an input schema that is not an object schema or cannot be compiled. */
function checkDefinition(d: Definition, access: AccessClause[]): void {
  if (d.inputSchema.type !== "object") throw invalid('The input schema must be an object schema ("type": "object").');
  const compiled = schemaProblem(d.inputSchema, {});
  if (compiled?.startsWith("the schema cannot be used")) throw invalid(`The input schema cannot be used: ${compiled}.`);
  const unknown = unknownArguments(d.inputSchema, access);
  if (unknown.length > 0) throw invalid(`An access clause narrows ${unknown.join(", ")}, which the input schema has no property for.`);
  for (const a of access)
    for (const [name, n] of Object.entries(a.arguments ?? {})) {
      const p = schemaProblem(n as Record<string, unknown>, null);
      if (p?.startsWith("the schema cannot be used")) throw invalid(`Clause ${a.id}'s narrowing of ${name} cannot be used: ${p}.`);
      if (a.decision !== "allow") throw invalid(`Clause ${a.id} denies, so it cannot narrow arguments (a deny hides the tool).`);
    }
}

/**
 * Creates a tool. An `http` tool's definition is the one given; an `mcp` tool's is its upstream's
 * listing now (the approval), and a description or schema given must be exactly the upstream's.
 */
export async function createTool(env: Env, workspaceId: string, input: ToolInput, by: string): Promise<StoredTool> {
  checkBinding(env, input.binding);
  const d = db(env);
  const t = schema.tools;
  const held = await d.select({ n: count() }).from(t).where(eq(t.workspaceId, workspaceId)).get();
  if ((held?.n ?? 0) >= MAX_TOOLS) throw new AppError(409, "too_many_tools", `A workspace may define at most ${MAX_TOOLS} tools.`);
  const id = newId("tool_");
  const now = Date.now();
  let definition: Definition;
  let upstreamSha256: string | null = null;
  if (input.binding.kind === "http") {
    if (!input.description || !input.input_schema) throw invalid("An http tool needs a description and an input_schema.");
    definition = {
      name: input.name,
      ...(input.title ? { title: input.title } : {}),
      description: input.description,
      inputSchema: input.input_schema,
      ...(input.annotations ? { annotations: input.annotations } : {}),
    };
  } else {
    const u = upstreamOf(env, input.binding, input.credential ?? null);
    const live = await listedUpstream(u, input.binding.timeout_ms);
    if (!live) throw new AppError(422, "upstream_tool_missing", `The upstream MCP server does not list a tool ${input.binding.tool}.`);
    definition = servedFromUpstream(input.name, live.tool);
    if (input.description !== undefined && input.description !== definition.description)
      throw invalid("The description differs from the upstream's: an upstream tool is served as its upstream lists it.");
    upstreamSha256 = live.sha256;
  }
  checkDefinition(definition, input.access);
  const sealed = input.credential ? await sealCredential(env, workspaceId, id, input.credential) : null;
  const inserted = await d
    .insert(t)
    .values({
      id,
      workspaceId,
      name: input.name,
      title: definition.title ?? null,
      description: definition.description,
      inputSchema: JSON.stringify(definition.inputSchema),
      annotations: definition.annotations ? JSON.stringify(definition.annotations) : null,
      binding: JSON.stringify(input.binding),
      access: JSON.stringify(input.access),
      costMicrousd: input.cost_microusd,
      limits: JSON.stringify(input.limits),
      defSha256: definitionSha256(definition),
      upstreamSha256,
      checkedMs: upstreamSha256 ? now : null,
      credential: sealed?.sealed ?? null,
      credentialKeyId: sealed?.keyId ?? null,
      credentialSetMs: sealed ? now : null,
      createdMs: now,
      updatedMs: now,
      approvedMs: now,
      approvedBy: by,
    })
    .onConflictDoNothing()
    .returning();
  if (inserted.length === 0) throw new AppError(409, "tool_exists", `The workspace already has a tool ${input.name}.`);
  return readTool(inserted[0]!);
}

/** Changes a tool's rules, status or credential (never its definition). */
export async function patchTool(env: Env, workspaceId: string, name: string, patch: ToolPatch): Promise<StoredTool> {
  const tool = await ownTool(env, workspaceId, name);
  const access = patch.access ?? tool.access;
  checkDefinition(tool.definition, access);
  const now = Date.now();
  const set: Partial<typeof schema.tools.$inferInsert> = { updatedMs: now, version: tool.row.version + 1, access: JSON.stringify(access) };
  if (patch.cost_microusd !== undefined) set.costMicrousd = patch.cost_microusd;
  if (patch.limits !== undefined) set.limits = JSON.stringify(patch.limits);
  if (patch.status !== undefined) set.status = patch.status;
  if (patch.credential === null) Object.assign(set, { credential: null, credentialKeyId: null, credentialSetMs: null });
  else if (patch.credential !== undefined) {
    const sealed = await sealCredential(env, workspaceId, tool.row.id, patch.credential);
    Object.assign(set, { credential: sealed.sealed, credentialKeyId: sealed.keyId, credentialSetMs: now });
  }
  await writeVersioned(env, tool, set);
  return ownTool(env, workspaceId, name);
}

/** `PUT /v1/tools/:name/definition`: an operator approves a new definition of an `http` tool. */
export const HttpDefinitionInput = z.strictObject({
  title: z.string().min(1).max(128).optional(),
  description: z.string().min(1).max(8192),
  input_schema: z.record(z.string(), z.unknown()),
  annotations: z.record(z.string(), z.unknown()).optional(),
});

/** Approves a new definition: an `http` tool's as given, an `mcp` tool's as its upstream lists it now (which must have `sha256`). */
export async function approveDefinition(
  env: Env,
  workspaceId: string,
  name: string,
  by: string,
  next: { http: z.infer<typeof HttpDefinitionInput> } | { mcpSha256: string },
): Promise<StoredTool> {
  const tool = await ownTool(env, workspaceId, name);
  let definition: Definition;
  let upstreamSha256: string | null = null;
  if ("http" in next) {
    if (tool.binding.kind !== "http") throw invalid("An upstream tool's definition is its upstream's: approve what it lists now.");
    const h = next.http;
    definition = {
      name,
      ...(h.title ? { title: h.title } : {}),
      description: h.description,
      inputSchema: h.input_schema,
      ...(h.annotations ? { annotations: h.annotations } : {}),
    };
  } else {
    if (tool.binding.kind !== "mcp") throw invalid("An http tool's definition is approved by giving it (PUT …/definition).");
    const live = await listedUpstream(await upstreamOfTool(env, tool.row, tool.binding), tool.binding.timeout_ms);
    if (!live) throw new AppError(422, "upstream_tool_missing", `The upstream no longer lists ${tool.binding.tool}; nothing to approve.`);
    if (live.sha256 !== next.mcpSha256)
      throw new AppError(
        409,
        "definition_changed",
        "The upstream's definition is not the one approved here (it changed again); review it and approve again.",
        {
          fields: { sha256: live.sha256 },
        },
      );
    definition = servedFromUpstream(name, live.tool);
    upstreamSha256 = live.sha256;
  }
  checkDefinition(definition, tool.access);
  const now = Date.now();
  await writeVersioned(env, tool, {
    title: definition.title ?? null,
    description: definition.description,
    inputSchema: JSON.stringify(definition.inputSchema),
    annotations: definition.annotations ? JSON.stringify(definition.annotations) : null,
    defSha256: definitionSha256(definition),
    ...(upstreamSha256 ? { upstreamSha256, checkedMs: now } : {}),
    drift: null,
    version: tool.row.version + 1,
    updatedMs: now,
    approvedMs: now,
    approvedBy: by,
  });
  return ownTool(env, workspaceId, name);
}

async function writeVersioned(env: Env, tool: StoredTool, set: Partial<typeof schema.tools.$inferInsert>): Promise<void> {
  const t = schema.tools;
  const res = await db(env)
    .update(t)
    .set(set)
    .where(and(eq(t.id, tool.row.id), eq(t.version, tool.row.version)))
    .run();
  if (res.meta.changes !== 1) throw new AppError(409, "conflict", "The tool changed while it was being updated; read it again and retry.");
}
