import { and, asc, eq, isNull, lt, or, sql } from "drizzle-orm";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { credentialForms, credentialHeader, openCredential } from "./credential.ts";
import { loopbackAllowed } from "./egress.ts";
import type { McpBinding } from "./schema.ts";
import { type Drift, readTool, type StoredTool, type ToolRow } from "./store.ts";
import { type UpstreamContext, type UpstreamDefinition, upstreamDefinition } from "./upstream-mcp.ts";

/** How often the cron re-checks an upstream tool's definition. */
export const CHECK_EVERY_MS = 15 * 60_000;
/** Upstream tools the cron checks per run (every 5 minutes); the rest wait for the next. */
export const CHECK_BATCH = 25;

/** Records that an upstream no longer lists the approved definition: the tool fails closed until an operator approves. */
export async function markDrift(env: Env, row: ToolRow, live: UpstreamDefinition | null, now: number): Promise<Drift> {
  const drift: Drift = live ? { seen_ms: now, sha256: live.sha256, definition: live.tool } : { seen_ms: now, missing: true };
  await db(env)
    .update(schema.tools)
    .set({ drift: JSON.stringify(drift), checkedMs: now })
    .where(eq(schema.tools.id, row.id));
  return drift;
}

/** What the Worker needs to reach an upstream MCP server, with a credential (or none). */
export function upstreamOf(env: Env, binding: McpBinding, credential: string | null): UpstreamContext {
  const header = credentialHeader(binding.credential, credential);
  const headers: Record<string, string> = header ? { [header[0]]: header[1] } : {};
  const forms = credential && header ? credentialForms(credential, header[1]) : [];
  return { binding, headers, credentialForms: forms, allowLoopback: loopbackAllowed(env), version: env.OXAGEN_VERSION };
}

/** {@link upstreamOf} a stored tool, its credential opened (one that does not open: 409). */
export async function upstreamOfTool(env: Env, row: ToolRow, binding: McpBinding): Promise<UpstreamContext> {
  const opened = await openCredential(env, row);
  if ("problem" in opened) throw new AppError(409, "credential_unusable", `The tool cannot reach its upstream: ${opened.problem}.`);
  return upstreamOf(env, binding, opened.credential);
}

/**
 * Re-checks an `mcp` tool's upstream definition: the same as approved (checked time noted), or a
 * drift recorded (the tool then fails closed). A drift stays until an operator approves, even if
 * the upstream goes back. An upstream that cannot be reached changes nothing.
 */
export async function checkUpstream(env: Env, tool: StoredTool, now: number): Promise<"same" | "drift" | "unreachable"> {
  if (tool.binding.kind !== "mcp") return "same";
  let live: UpstreamDefinition | null;
  try {
    live = await upstreamDefinition(await upstreamOfTool(env, tool.row, tool.binding), AbortSignal.timeout(tool.binding.timeout_ms));
  } catch {
    return "unreachable";
  }
  if (live?.sha256 === tool.row.upstreamSha256) {
    await db(env).update(schema.tools).set({ checkedMs: now }).where(eq(schema.tools.id, tool.row.id));
    return tool.drift ? "drift" : "same";
  }
  await markDrift(env, tool.row, live, now);
  return "drift";
}

/** The cron's part: re-checks the upstream tools checked longest ago (at most {@link CHECK_BATCH}). */
export async function checkToolDefinitions(env: Env, now: number): Promise<number> {
  const t = schema.tools;
  const due = await db(env)
    .select()
    .from(t)
    .where(
      and(
        eq(t.status, "active"),
        sql`json_extract(${t.binding}, '$.kind') = 'mcp'`,
        or(isNull(t.checkedMs), lt(t.checkedMs, now - CHECK_EVERY_MS)),
      ),
    )
    .orderBy(asc(t.checkedMs))
    .limit(CHECK_BATCH)
    .all();
  const results = await Promise.allSettled(due.map((row) => checkUpstream(env, readTool(row), now)));
  return results.filter((r) => r.status === "fulfilled" && r.value === "drift").length;
}
