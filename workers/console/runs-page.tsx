/** @jsxImportSource hono/jsx */
import { eq } from "drizzle-orm";
import { z } from "zod";
import { db, schema } from "../db/client.ts";
import { listRuns, RunListQuery } from "../lib/runs.ts";
import type { PageContext } from "./layout.tsx";
import { type RunFilters, RunsPage } from "./pages/runs.tsx";

const KEYS = ["status", "tier", "grade", "host", "agent", "from", "to"] as const;

// A datetime-local value, read as UTC (the page shows every time in UTC).
function utcMs(v: string): number | undefined {
  if (!v) return undefined;
  const ms = Date.parse(/Z$/.test(v) ? v : `${v}Z`);
  return Number.isFinite(ms) ? ms : Number.NaN;
}

/** The runs page for a query string: the form's filters go through the API's own query schema. */
export async function runsPage(env: Env, workspaceId: string, ctx: PageContext, query: Record<string, string>) {
  const filters = Object.fromEntries(KEYS.map((k) => [k, (query[k] ?? "").slice(0, 64)])) as unknown as RunFilters;
  const raw = {
    ...Object.fromEntries(KEYS.filter((k) => filters[k] !== "" && k !== "from" && k !== "to").map((k) => [k, filters[k]])),
    ...(filters.from ? { from: utcMs(filters.from) } : {}),
    ...(filters.to ? { to: utcMs(filters.to) } : {}),
    ...(query.cursor ? { cursor: query.cursor } : {}),
  };
  const parsed = RunListQuery.safeParse(raw);
  // The computer filter's choices: the first 500 by id (one index range), not every computer of a large fleet.
  const hosts = await db(env)
    .select({ id: schema.hosts.id, hostname: schema.hosts.hostname })
    .from(schema.hosts)
    .where(eq(schema.hosts.workspaceId, workspaceId))
    .orderBy(schema.hosts.id)
    .limit(500)
    .all();
  if (!parsed.success) {
    const fields = Object.keys(z.flattenError(parsed.error).fieldErrors).join(", ");
    return {
      status: 400 as const,
      page: <RunsPage ctx={ctx} filters={filters} hosts={hosts} runs={[]} next={null} error={`These filters are not valid: ${fields}.`} />,
    };
  }
  const page = await listRuns(env, workspaceId, parsed.data);
  return {
    status: 200 as const,
    page: <RunsPage ctx={ctx} filters={filters} hosts={hosts} runs={page.runs} next={page.next} error={null} />,
  };
}
