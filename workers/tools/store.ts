import { and, asc, eq } from "drizzle-orm";
import { z } from "zod";
import { toolDefinitionDigest } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { AccessClause, Binding, CallLimit } from "./schema.ts";

/** A `tools` row. */
export type ToolRow = typeof schema.tools.$inferSelect;

/** A tool as the MCP endpoint lists it (before an access clause narrows its schema). */
export interface Definition {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

/** What an `mcp` tool's upstream listed when it differed from the approved definition. */
export const Drift = z.union([
  z.strictObject({ seen_ms: z.number().int(), missing: z.literal(true) }),
  z.strictObject({ seen_ms: z.number().int(), sha256: z.string(), definition: z.record(z.string(), z.unknown()) }),
]);
/** One of {@link Drift}. */
export type Drift = z.infer<typeof Drift>;

/** A tool row read: its parts parsed. */
export interface StoredTool {
  row: ToolRow;
  definition: Definition;
  binding: Binding;
  access: AccessClause[];
  limits: CallLimit[];
  drift: Drift | null;
}

function parsed<S extends z.ZodType>(s: S, text: string, what: string): z.output<S> {
  const r = s.safeParse(JSON.parse(text));
  if (!r.success) throw new AppError(500, "internal", `A tool's stored ${what} is damaged.`, { cause: r.error });
  return r.data;
}

/** Reads a tool row; a row that does not parse is a fault (500). */
export function readTool(row: ToolRow): StoredTool {
  const definition: Definition = {
    name: row.name,
    ...(row.title !== null ? { title: row.title } : {}),
    description: row.description,
    inputSchema: parsed(z.record(z.string(), z.unknown()), row.inputSchema, "input schema"),
    ...(row.annotations !== null ? { annotations: parsed(z.record(z.string(), z.unknown()), row.annotations, "annotations") } : {}),
  };
  return {
    row,
    definition,
    binding: parsed(Binding, row.binding, "binding"),
    access: parsed(z.array(AccessClause), row.access, "access clauses"),
    limits: parsed(z.array(CallLimit), row.limits, "limits"),
    drift: row.drift === null ? null : parsed(Drift, row.drift, "drift"),
  };
}

/** The digest the meter row and the call's `_meta` name: of the approved definition, before any narrowing. */
export function definitionSha256(d: Definition): string {
  return toolDefinitionDigest(d as unknown as Record<string, unknown>).sha256;
}

/** The workspace's tools that are served (active), by name. */
export async function servedTools(env: Env, workspaceId: string): Promise<StoredTool[]> {
  const t = schema.tools;
  const rows = await db(env)
    .select()
    .from(t)
    .where(and(eq(t.workspaceId, workspaceId), eq(t.status, "active")))
    .orderBy(asc(t.name))
    .all();
  return rows.map(readTool);
}

/** One tool of the workspace, or 404. */
export async function ownTool(env: Env, workspaceId: string, name: string): Promise<StoredTool> {
  const t = schema.tools;
  const row = await db(env)
    .select()
    .from(t)
    .where(and(eq(t.workspaceId, workspaceId), eq(t.name, name)))
    .get();
  if (!row) throw new AppError(404, "not_found", "No such tool.");
  return readTool(row);
}

/** A tool as the operator API answers it: never the credential, only whether one is set. */
export function toolView(t: StoredTool) {
  const r = t.row;
  return {
    name: r.name,
    title: r.title,
    description: r.description,
    input_schema: t.definition.inputSchema,
    annotations: t.definition.annotations ?? null,
    binding: t.binding,
    access: t.access,
    cost_microusd: r.costMicrousd,
    limits: t.limits,
    status: r.status,
    definition_sha256: r.defSha256,
    upstream_sha256: r.upstreamSha256,
    drift: t.drift,
    checked_ms: r.checkedMs,
    credential: { set: r.credential !== null, set_ms: r.credentialSetMs },
    version: r.version,
    created_ms: r.createdMs,
    updated_ms: r.updatedMs,
    approved_ms: r.approvedMs,
    approved_by: r.approvedBy,
  };
}
