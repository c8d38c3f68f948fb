/** @jsxImportSource hono/jsx */
import { asc, eq } from "drizzle-orm";
import { Hono } from "hono";
import { Sha256Hex, ToolName } from "../../protocol/index.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { workspaceObject } from "../lib/policy-store.ts";
import { ownTool as storedTool, readTool, type StoredTool } from "../tools/store.ts";
import { servedFromUpstream } from "../tools/upstream-mcp.ts";
import { approveDefinition } from "../tools/write.ts";
import type { ToolCallRow, ToolUse } from "../workspace/tool-meter.ts";
import { Action, Head, Layout, type PageContext, State, usd, When } from "./layout.tsx";
import { type ConsoleEnv, formOf, requireCsrf } from "./session.ts";

const DAY_MS = 24 * 60 * 60_000;
const USE_DAYS = 30;
const CALLS_SHOWN = 50;

const ownTool = (env: Env, workspaceId: string, name: string) => {
  if (!ToolName.safeParse(name).success) throw new AppError(404, "not_found", "No such tool.");
  return storedTool(env, workspaceId, name);
};

const ctxOf = (c: { var: ConsoleEnv["Variables"] }): PageContext => ({
  workspaceId: c.var.workspaceId,
  tokenId: c.var.tokenId,
  scope: c.var.scope,
  csrf: c.var.csrf,
});

/** A line diff (longest common subsequence) of two texts: each line kept, removed or added. */
export function lineDiff(before: string, after: string): { op: " " | "-" | "+"; line: string }[] {
  const a = before.split("\n").slice(0, 400);
  const b = after.split("\n").slice(0, 400);
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: { op: " " | "-" | "+"; line: string }[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ op: " ", line: a[i++]! });
      j++;
    } else if (j < b.length && (i >= a.length || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) out.push({ op: "+", line: b[j++]! });
    else out.push({ op: "-", line: a[i++]! });
  }
  return out;
}

const pretty = (v: unknown) => JSON.stringify(v, null, 2);
const target = (t: StoredTool) =>
  t.binding.kind === "http" ? `${t.binding.method} ${t.binding.origin}${t.binding.path}` : `${t.binding.url} → ${t.binding.tool}`;

function CallsTable(props: { calls: ToolCallRow[]; tool?: boolean }) {
  if (props.calls.length === 0) return <p class="muted">No call yet.</p>;
  return (
    <table>
      <Head cols={["When", ...(props.tool ? ["Tool"] : []), "Caller", "Run", "Status", "Rule", "Duration", "Input", "Output", "Cost"]} />
      <tbody>
        {props.calls.map((r) => (
          <tr>
            <td>
              <When ms={r.ts_ms} />
            </td>
            {props.tool ? <td class="mono">{r.tool}</td> : null}
            <td class="mono">{r.caller === "gateway" ? `${r.host_id} · ${r.agent ?? "no agent"}` : `direct · ${r.agent}`}</td>
            <td class="mono">{r.run_id ? <a href={`/console/runs/${r.run_id}`}>{r.run_id.slice(0, 12)}…</a> : "—"}</td>
            <td>
              <State value={r.status} />
            </td>
            <td class="mono" title={r.reason ?? undefined}>
              {r.rule ?? ""}
            </td>
            <td>{r.duration_ms === null ? "—" : `${r.duration_ms} ms`}</td>
            <td class="mono" title={r.input_sha256}>
              {r.input_sha256.slice(0, 12)} · {r.input_size} B
            </td>
            <td class="mono" title={r.output_sha256 ?? undefined}>
              {r.output_sha256 ? `${r.output_sha256.slice(0, 12)} · ${r.output_size} B` : "—"}
            </td>
            <td>{usd(r.cost_microusd)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function ToolsPage(props: { ctx: PageContext; tools: StoredTool[]; use: ToolUse[]; calls: ToolCallRow[] }) {
  const use = new Map(props.use.map((u) => [u.tool, u]));
  return (
    <Layout title="Tools" here="/console/tools" ctx={props.ctx}>
      <h1>Tools</h1>
      <p>
        The workspace's own tools, served at <code>/v1/mcp/{props.ctx.workspaceId}</code> to the gateway and to agents with a tool token.
        Each call is checked on the server and metered here, outside the run's record; its credential never leaves the server. Calls,
        refusals and spend are over the last {USE_DAYS} days.
      </p>
      {props.tools.length === 0 ? (
        <p class="muted">No tool yet: define one with POST /v1/tools (docs/api.md, "Workspace tools").</p>
      ) : (
        <table>
          <Head cols={["Tool", "Binding", "Status", "Definition", "Cost per call", "Calls", "Refused", "Errors", "Spend"]} />
          <tbody>
            {props.tools.map((t) => {
              const u = use.get(t.row.name);
              return (
                <tr>
                  <th scope="row">
                    <a href={`/console/tools/${t.row.name}`}>{t.row.name}</a>
                  </th>
                  <td class="mono">{target(t)}</td>
                  <td>
                    <State value={t.row.status} />
                  </td>
                  <td>{t.drift ? <State value="definition_drift" /> : <span class="muted">approved</span>}</td>
                  <td>{usd(t.row.costMicrousd)}</td>
                  <td>{u?.calls ?? 0}</td>
                  <td>{u?.refused ?? 0}</td>
                  <td>{u?.errors ?? 0}</td>
                  <td>{usd(u?.spent_microusd ?? 0)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <h2>Recent calls</h2>
      <CallsTable calls={props.calls} tool />
    </Layout>
  );
}

function ToolPage(props: { ctx: PageContext; tool: StoredTool; calls: ToolCallRow[]; notice: string | null }) {
  const t = props.tool;
  const drift = t.drift;
  const pending = drift && "definition" in drift ? servedFromUpstream(t.row.name, drift.definition) : null;
  return (
    <Layout title={`Tool ${t.row.name}`} here="/console/tools" ctx={props.ctx}>
      <h1>
        Tool <code>{t.row.name}</code>
      </h1>
      {props.notice ? (
        <p class="notice" role="status">
          {props.notice}
        </p>
      ) : null}
      <dl class="facts">
        <dt>Binding</dt>
        <dd class="mono">{target(t)}</dd>
        <dt>Status</dt>
        <dd>
          <State value={t.row.status} />
        </dd>
        <dt>Credential</dt>
        <dd>
          {t.row.credential ? (
            <>
              set, <When ms={t.row.credentialSetMs} /> (never shown)
            </>
          ) : (
            "none"
          )}
        </dd>
        <dt>Cost per call</dt>
        <dd>{usd(t.row.costMicrousd)}</dd>
        <dt>Approved definition</dt>
        <dd class="mono">
          {t.row.defSha256} (<When ms={t.row.approvedMs} />, token {t.row.approvedBy ?? "—"})
        </dd>
        {t.row.upstreamSha256 ? (
          <>
            <dt>Upstream definition pinned</dt>
            <dd class="mono">
              {t.row.upstreamSha256} (checked <When ms={t.row.checkedMs} />)
            </dd>
          </>
        ) : null}
      </dl>
      {drift ? (
        <section>
          <h2>
            <State value="definition_drift" /> The upstream changed this tool
          </h2>
          <p class="notice bad" role="alert">
            Seen <When ms={drift.seen_ms} />. Every call is refused (<code>definition_drift</code>) until an operator approves the new
            definition. The agents keep being shown the approved one.
          </p>
          {pending ? (
            <>
              <p>The approved definition (−) against the upstream's new one (+):</p>
              <pre class="diff">
                {lineDiff(pretty(t.definition), pretty(pending)).map((l) => (
                  <span class={l.op === "+" ? "added" : l.op === "-" ? "removed" : undefined}>{`${l.op} ${l.line}\n`}</span>
                ))}
              </pre>
              {props.ctx.scope === "admin" && "sha256" in drift ? (
                <Action
                  action={`/console/tools/${t.row.name}/approve`}
                  csrf={props.ctx.csrf}
                  label="Approve the new definition"
                  hidden={{ sha256: drift.sha256 }}
                  danger
                />
              ) : null}
            </>
          ) : (
            <p>The upstream no longer lists this tool: there is nothing to approve until it does again.</p>
          )}
        </section>
      ) : null}
      <h2>Definition</h2>
      <p>{t.definition.description}</p>
      <pre>{pretty(t.definition.inputSchema)}</pre>
      <h2>Access clauses</h2>
      {t.access.length === 0 ? <p class="muted">No clause: the tool is served to nobody.</p> : <pre>{pretty(t.access)}</pre>}
      <h2>Call limits</h2>
      {t.limits.length === 0 ? <p class="muted">None.</p> : <pre>{pretty(t.limits)}</pre>}
      <h2>Calls</h2>
      <CallsTable calls={props.calls} />
    </Layout>
  );
}

/** The console's Tools pages: the catalog with each tool's calls, refusals and spend; a tool's definition, drift and calls. */
export const toolsPages = new Hono<ConsoleEnv>()
  .get("/console/tools", async (c) => {
    const t = schema.tools;
    const meter = workspaceObject(c.env, c.var.workspaceId);
    const [rows, use, calls] = await Promise.all([
      db(c.env).select().from(t).where(eq(t.workspaceId, c.var.workspaceId)).orderBy(asc(t.name)).all(),
      meter.toolUse(Date.now() - USE_DAYS * DAY_MS),
      meter.toolCalls({ limit: CALLS_SHOWN }),
    ]);
    return c.html(<ToolsPage ctx={ctxOf(c)} tools={rows.map(readTool)} use={use} calls={calls} />);
  })
  .get("/console/tools/:name", async (c) => {
    const tool = await ownTool(c.env, c.var.workspaceId, c.req.param("name"));
    const calls = await workspaceObject(c.env, c.var.workspaceId).toolCalls({ tool: tool.row.name, limit: CALLS_SHOWN });
    const notice = c.req.query("done") === "approved" ? "Approved: the new definition is served and its calls go through." : null;
    return c.html(<ToolPage ctx={ctxOf(c)} tool={tool} calls={calls} notice={notice} />);
  })
  .post("/console/tools/:name/approve", async (c) => {
    const form = formOf(c);
    requireCsrf(c, form, c.var.csrf);
    const tool = await ownTool(c.env, c.var.workspaceId, c.req.param("name"));
    const sha = Sha256Hex.safeParse(form.get("sha256"));
    if (!sha.success) throw new AppError(400, "invalid_request", "The approval names no definition.");
    await approveDefinition(c.env, c.var.workspaceId, tool.row.name, c.var.tokenId, { mcpSha256: sha.data });
    return c.redirect(`/console/tools/${tool.row.name}?done=approved`, 303);
  });
