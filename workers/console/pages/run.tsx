/** @jsxImportSource hono/jsx */
import type { Gap } from "../../../protocol/index.ts";
import type { BudgetUse } from "../../lib/budget-use.ts";
import { type RunRow, runDuration, runOutcome } from "../../lib/run-rows.ts";
import { exportFileName } from "../../../protocol/index.ts";
import { BudgetUseTable } from "../budget-use.tsx";
import { type ModelSpend, ModelSpendTable } from "./spend-models.tsx";
import { type FrameRowView, Timeline } from "./timeline.tsx";
import { Action, duration, Layout, type PageContext, plural, State, usd, When, Head } from "../layout.tsx";

export type { FrameRowView } from "./timeline.tsx";

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
  notice: { text: string; bad: boolean } | null;
  byModel: ModelSpend[];
  budgets: BudgetUse;
  /** By seq, what the vendor's error answer said, for the failed model calls on this page. */
  vendorSaid: Map<number, string>;
}) {
  const r = props.run;
  const file = exportFileName(r.id);
  const exportable = r.status !== "live" && r.status !== "closed";
  const outcome = runOutcome(r);
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
        <p class={props.notice.bad ? "notice bad" : "notice"} role="status">
          {props.notice.text}
        </p>
      ) : null}
      <dl class="facts">
        <dt>Outcome</dt>
        <dd>
          <State value={outcome.value} />: {outcome.reason}
          {r.outcome ? <span class="muted"> (the record's own: {r.outcome})</span> : null}
        </dd>
        <dt>Harness / agent</dt>
        <dd>{r.agent && r.agent !== r.harness ? `${r.harness} / ${r.agent}` : r.harness}</dd>
        <dt>Computer</dt>
        <dd>
          {r.hostname ?? "—"} <code class="muted">{r.hostId}</code>
        </dd>
        <dt>Session</dt>
        <dd class="mono">{r.sessionId}</dd>
        <dt>Enforcement tier</dt>
        <dd>
          <strong>{r.tier}</strong>: {r.tierReason}
        </dd>
        <dt>Replay grade</dt>
        <dd>
          <strong>{r.grade}</strong>: {r.gradeReason}
        </dd>
        <dt>Model calls</dt>
        <dd>
          {plural(r.modelCalls, "model call")}
          {r.modelFailed > 0 ? `, ${r.modelFailed} failed` : ""}
        </dd>
        <dt>Spend</dt>
        <dd>
          {usd(r.spendMicrousd)} priced by the server
          {r.unpricedCalls > 0 ? `, plus ${plural(r.unpricedCalls, "unpriced call")} (model or vendor not in the price table)` : ""}
        </dd>
        <dt>Frames</dt>
        <dd>
          {plural(r.frameCount, "frame")} stored, {plural(r.lockCount, "lock")}, {props.heldFrames} held waiting for earlier frames
        </dd>
        <dt>First / last frame</dt>
        <dd>
          <When ms={r.firstFrameMs} /> / <When ms={r.lastFrameMs} /> ({duration(runDuration(r))})
        </dd>
      </dl>
      <div class="actions">
        {r.status === "sealed" ? null : props.paused ? (
          <Action action={`/console/runs/${r.id}/resume`} csrf={props.ctx.csrf} label="Resume run" />
        ) : r.status === "live" ? (
          // Only a live run has a next step to refuse: an ended one has none.
          <Action action={`/console/runs/${r.id}/pause`} csrf={props.ctx.csrf} label="Pause run" />
        ) : null}
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
      {exportable ? (
        <>
          <h2 id="verify">Verify an export</h2>
          <p>Check the downloaded bundle offline, with the server key pinned:</p>
          <pre>{`oxagen verify ${file} --server-key ${props.serverKey.pub}`}</pre>
          <p class="muted">
            Server key id <code>{props.serverKey.keyId}</code>. After a key rotation, pin every key with{" "}
            <code>--server-keys keys.json</code>, the answer of <code>GET /v1/keys</code>.
          </p>
        </>
      ) : null}
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
                        ? plural(g.bodies.length, "body", "bodies")
                        : "—"}
                </td>
                <td>{g.detail}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2 id="timeline">Timeline</h2>
      <Timeline run={r.id} frames={props.frames} vendorSaid={props.vendorSaid} />
      <p>
        {props.from > 0 ? <a href={`/console/runs/${r.id}?from=${Math.max(0, props.from - pageSize)}#timeline`}>← Earlier frames</a> : null}{" "}
        {props.next !== null ? <a href={`/console/runs/${r.id}?from=${props.next}#timeline`}>Later frames →</a> : null}
      </p>
    </Layout>
  );
}
