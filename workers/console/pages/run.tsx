/** @jsxImportSource hono/jsx */
import type { Gap } from "../../../protocol/index.ts";
import type { BudgetUse } from "../../lib/budget-use.ts";
import type { RunRow } from "../../lib/run-rows.ts";
import { exportFileName } from "../../lib/runs.ts";
import { BudgetUseTable } from "../budget-use.tsx";
import { type ModelSpend, ModelSpendTable } from "./spend-models.tsx";
import { Action, Layout, type PageContext, State, usd, When, Head } from "../layout.tsx";

/** A stored frame as the chain pages it. */
export interface FrameRowView {
  seq: number;
  t: number;
  kind: string;
  payload: string;
  hash: string;
}

type Ref = { role?: unknown; sha256?: unknown; size?: unknown; kept?: unknown; why?: unknown };
type Fields = Record<string, unknown> & { bodies?: Ref[] };

const NOT_KEPT: Record<string, string> = {
  over_limit: "not kept: over the 1 MiB limit",
  digest_only: "not kept: the workspace keeps digests only",
  retention: "not kept: the workspace's retention does not keep this role",
};

function fields(payload: string): Fields {
  try {
    const v = JSON.parse(payload) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Fields) : {};
  } catch {
    return {};
  }
}

const str = (v: unknown) => (typeof v === "string" ? v : typeof v === "number" ? String(v) : "");

function ms(n: number): string {
  return n < 1000 ? `${n} ms` : `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
}

/** What a frame's row says in its detail column: tool, decision, model, reason, outcome. */
function detail(kind: string, f: Fields): string {
  const parts: string[] = [];
  if (f.tool_name) parts.push(`tool ${str(f.tool_name)}`);
  if (f.subject) parts.push(`${str(f.subject)}`);
  if (f.decision) parts.push(`decision ${str(f.decision)}${f.mode === "observe" ? " (observe)" : ""}`);
  if (f.rule) parts.push(`rule ${str(f.rule)}`);
  if (f.reason && typeof f.reason === "string") parts.push(f.reason);
  if (f.model) parts.push(`model ${str(f.model)}`);
  if (f.status !== undefined) parts.push(`status ${str(f.status)}`);
  if (f.exit_code !== undefined) parts.push(`exit ${str(f.exit_code)}`);
  if (f.program) parts.push(`program ${str(f.program)}`);
  if (f.op) parts.push(`${str(f.op)} ${str(f.file)}`);
  if (f.host && kind === "network") parts.push(`${str(f.method)} ${str(f.host)}`.trim());
  if (f.cause) parts.push(`cause ${str(f.cause)}${f.detail ? `: ${str(f.detail)}` : ""}`);
  if (f.outcome) parts.push(`outcome ${str(f.outcome)}`);
  if (kind === "agent_start") parts.push(`${str(f.harness)}${f.cwd ? ` in ${str(f.cwd)}` : ""}`);
  if (Array.isArray(f.changed)) parts.push(`${f.changed.length} changed paths`);
  return parts.join(" · ");
}

/** The duration a frame shows: a tool call's own, else the time since its request in this page. */
function durations(frames: FrameRowView[]): Map<number, string> {
  const requested = new Map<string, number>();
  const out = new Map<number, string>();
  for (const fr of frames) {
    const f = fields(fr.payload);
    const id = str(f.tool_use_id);
    if (fr.kind === "tool_requested" && id) requested.set(id, fr.t);
    if (fr.kind === "tool_call") {
      if (typeof f.duration_ms === "number") out.set(fr.seq, ms(f.duration_ms));
      else if (id && requested.has(id)) out.set(fr.seq, `${ms(fr.t - requested.get(id)!)} since request`);
    }
    if (fr.kind === "llm_call" && typeof f.latency_ms === "number") out.set(fr.seq, ms(f.latency_ms));
  }
  return out;
}

function Bodies(props: { run: string; seq: number; refs: Ref[] | undefined }) {
  if (!props.refs || props.refs.length === 0) return null;
  return (
    <ul class="plain">
      {props.refs.map((b, i) => (
        <li>
          {str(b.role)} ({str(b.size)} bytes){" "}
          {b.kept === true ? (
            <a href={`/console/runs/${props.run}/frames/${props.seq}/bodies/${i}`}>show</a>
          ) : (
            <span class="muted">{NOT_KEPT[str(b.why)] ?? "not kept"}</span>
          )}
        </li>
      ))}
    </ul>
  );
}

/** One run: its state, tier and grade with reasons, actions, export and verify, gaps, and its timeline. */
export function RunPage(props: {
  ctx: PageContext;
  run: RunRow;
  paused: boolean;
  heldFrames: number;
  gaps: Gap[];
  frames: FrameRowView[];
  from: number;
  next: number | null;
  serverKey: { keyId: string; pub: string };
  notice: string | null;
  byModel: ModelSpend[];
  budgets: BudgetUse;
}) {
  const r = props.run;
  const file = exportFileName(r.id);
  const exportable = r.status !== "live" && r.status !== "closed";
  const took = durations(props.frames);
  const pageSize = 200;
  return (
    <Layout title={`Run ${r.id}`} here="/console/runs" ctx={props.ctx}>
      <p>
        <a href="/console/runs">← Runs</a>
      </p>
      <h1>
        Run <code>{r.id}</code> <State value={r.status} />
        {props.paused && r.status !== "sealed" ? (
          <>
            {" "}
            <State value="paused" />
          </>
        ) : null}
      </h1>
      {props.notice ? (
        <p class="notice" role="status">
          {props.notice}
        </p>
      ) : null}
      <dl class="facts">
        <dt>Harness / agent</dt>
        <dd>{r.agent && r.agent !== r.harness ? `${r.harness} / ${r.agent}` : r.harness}</dd>
        <dt>Computer</dt>
        <dd class="mono">{r.hostId}</dd>
        <dt>Session</dt>
        <dd class="mono">{r.sessionId}</dd>
        <dt>Outcome</dt>
        <dd>{r.outcome ?? "—"}</dd>
        <dt>Enforcement tier</dt>
        <dd>
          <strong>{r.tier}</strong>: {r.tierReason}
        </dd>
        <dt>Replay grade</dt>
        <dd>
          <strong>{r.grade}</strong>: {r.gradeReason}
        </dd>
        <dt>Spend</dt>
        <dd>
          {usd(r.spendMicrousd)} priced by the server
          {r.unpricedCalls > 0
            ? `, plus ${r.unpricedCalls} unpriced call${r.unpricedCalls === 1 ? "" : "s"} (model or vendor not in the price table)`
            : ""}
        </dd>
        <dt>Frames</dt>
        <dd>
          {r.frameCount} stored, {r.lockCount} locks, {props.heldFrames} held waiting for earlier frames
        </dd>
        <dt>First / last frame</dt>
        <dd>
          <When ms={r.firstFrameMs} /> / <When ms={r.lastFrameMs} />
        </dd>
      </dl>
      <div class="actions">
        {r.status === "sealed" ? null : props.paused ? (
          <Action action={`/console/runs/${r.id}/resume`} csrf={props.ctx.csrf} label="Resume run" />
        ) : (
          <Action action={`/console/runs/${r.id}/pause`} csrf={props.ctx.csrf} label="Pause run" />
        )}
        {r.status === "sealed" ? null : <Action action={`/console/runs/${r.id}/seal`} csrf={props.ctx.csrf} label="Seal run" danger />}
        <a class="button" href={`/console/runs/${r.id}/coverage`}>
          Coverage statement
        </a>
        {exportable ? (
          <a class="button" href={`/console/runs/${r.id}/export`} download={file}>
            Export bundle
          </a>
        ) : (
          <span class="muted">
            {r.status === "live"
              ? "A live run cannot be exported: it can be once it ends or is sealed."
              : "Closed after 12 quiet hours: it can be exported once the computer ends it or it is sealed."}
          </span>
        )}
      </div>
      <section aria-labelledby="spend-by-model">
        <h2 id="spend-by-model">Spend by model</h2>
        <ModelSpendTable
          rows={props.byModel}
          caption="The run's model calls, priced by the server from the usage its record holds"
          empty="No model call in this run's record."
        />
      </section>
      {props.budgets.clauses.length > 0 ? (
        <section aria-labelledby="run-budgets">
          <h2 id="run-budgets">Budgets</h2>
          <BudgetUseTable
            clauses={props.budgets.clauses}
            caption="The clauses that apply to this run, for it, its computer and the workspace, in each clause's current window"
          />
        </section>
      ) : null}
      <h2 id="verify">Verify an export</h2>
      <p>Check the downloaded bundle offline, with the server key pinned:</p>
      <pre>{`oxagen verify ${file} --server-key ${props.serverKey.pub}`}</pre>
      <p class="muted">
        Server key id <code>{props.serverKey.keyId}</code>. After a key rotation, pin every key with <code>--server-keys keys.json</code>,
        the answer of <code>GET /v1/keys</code>.
      </p>
      <h2 id="gaps">Gaps ({props.gaps.length})</h2>
      {props.gaps.length === 0 ? (
        <p>The record lists no gap.</p>
      ) : (
        <table>
          <Head cols={["Kind", "Seen by", "Where", "Cause"]} />
          <tbody>
            {props.gaps.map((g) => (
              <tr>
                <th scope="row">{g.kind}</th>
                <td>{g.source}</td>
                <td class="mono">
                  {g.seq !== undefined
                    ? `seq ${g.seq}`
                    : g.from_seq !== undefined
                      ? `seq ${g.from_seq}–${g.to_seq ?? ""}`
                      : g.bodies
                        ? `${g.bodies.length} bodies`
                        : "—"}
                </td>
                <td>{g.detail}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2 id="timeline">Timeline</h2>
      <table>
        <Head cols={["Seq", "Time (computer)", "Kind", "Path", "What", "Took", "Bodies"]} />
        <tbody>
          {props.frames.map((fr) => {
            const f = fields(fr.payload);
            return (
              <tr id={`seq-${fr.seq}`}>
                <th scope="row">{fr.seq}</th>
                <td>
                  <When ms={fr.t} />
                </td>
                <td class="mono">{fr.kind}</td>
                <td>
                  {str(f.path)}
                  {f.backfilled ? " (backfilled)" : ""}
                </td>
                <td>{detail(fr.kind, f)}</td>
                <td>{took.get(fr.seq) ?? ""}</td>
                <td>
                  <Bodies run={r.id} seq={fr.seq} refs={f.bodies} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <p>
        {props.from > 0 ? <a href={`/console/runs/${r.id}?from=${Math.max(0, props.from - pageSize)}#timeline`}>← Earlier frames</a> : null}{" "}
        {props.next !== null ? <a href={`/console/runs/${r.id}?from=${props.next}#timeline`}>Later frames →</a> : null}
      </p>
    </Layout>
  );
}

/** One body of a frame, shown as escaped text (or why it is not shown). */
export function BodyPage(props: {
  ctx: PageContext;
  run: string;
  seq: number;
  role: string;
  sha256: string;
  size: number;
  text: string | null;
  why: string | null;
  truncated: boolean;
}) {
  return (
    <Layout title={`Body of frame ${props.seq}`} here="/console/runs" ctx={props.ctx}>
      <p>
        <a href={`/console/runs/${props.run}#seq-${props.seq}`}>← Run {props.run}</a>
      </p>
      <h1>
        {props.role} body of frame {props.seq}
      </h1>
      <p class="muted">
        SHA-256 <code>{props.sha256}</code>, {props.size} bytes, after the computer removed credentials.
      </p>
      {props.text !== null ? (
        <>
          {props.truncated ? <p class="notice">The first 256 KiB are shown.</p> : null}
          <pre>{props.text}</pre>
        </>
      ) : (
        <p class="notice">{props.why}</p>
      )}
    </Layout>
  );
}
