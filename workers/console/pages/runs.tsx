/** @jsxImportSource hono/jsx */
import { GRADES, TIERS } from "../../../protocol/index.ts";
import { type RunRow, runDuration, runOutcome } from "../../lib/run-rows.ts";
import { RUN_STATUSES } from "../../lib/runs.ts";
import { duration, Layout, type PageContext, State, usd, When, Head } from "../layout.tsx";

/** The filters as the form holds them (strings, empty when unset). */
export interface RunFilters {
  status: string;
  tier: string;
  grade: string;
  host: string;
  agent: string;
  from: string;
  to: string;
}

function Choice(props: { name: string; label: string; value: string; options: readonly string[] }) {
  return (
    <div>
      <label for={`f-${props.name}`}>{props.label}</label>
      <select id={`f-${props.name}`} name={props.name}>
        <option value="">any</option>
        {props.options.map((o) => (
          <option value={o} selected={o === props.value}>
            {o}
          </option>
        ))}
      </select>
    </div>
  );
}

/**
 * The runs list: filters (a GET form), and one row per run with what an operator reads first: its
 * outcome and why, its agent and computer, when it started and how long it ran, its model calls
 * (and failures), its cost and its gaps; then paging.
 */
export function RunsPage(props: {
  ctx: PageContext;
  filters: RunFilters;
  hosts: { id: string; hostname: string }[];
  runs: RunRow[];
  next: string | null;
  error: string | null;
}) {
  const f = props.filters;
  const nextQuery = props.next
    ? new URLSearchParams({ ...Object.fromEntries(Object.entries(f).filter(([, v]) => v !== "")), cursor: props.next })
    : null;
  return (
    <Layout title="Runs" here="/console/runs" ctx={props.ctx}>
      <h1>Runs</h1>
      <form class="filters" method="get" action="/console/runs" aria-label="Filter runs">
        <Choice name="status" label="Status" value={f.status} options={RUN_STATUSES} />
        <Choice name="tier" label="Tier" value={f.tier} options={TIERS} />
        <Choice name="grade" label="Grade" value={f.grade} options={GRADES} />
        <div>
          <label for="f-host">Computer</label>
          <select id="f-host" name="host">
            <option value="">any</option>
            {props.hosts.map((h) => (
              <option value={h.id} selected={h.id === f.host}>
                {h.hostname} ({h.id})
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="f-agent">Harness or agent</label>
          <input id="f-agent" name="agent" value={f.agent} size={14} />
        </div>
        <div>
          <label for="f-from">Last frame from (UTC)</label>
          <input id="f-from" name="from" type="datetime-local" value={f.from} />
        </div>
        <div>
          <label for="f-to">to (UTC)</label>
          <input id="f-to" name="to" type="datetime-local" value={f.to} />
        </div>
        <div>
          <button type="submit">Filter</button> <a href="/console/runs">clear</a>
        </div>
      </form>
      {props.error ? (
        <p class="notice bad" role="alert">
          {props.error}
        </p>
      ) : null}
      <table>
        <Head cols={["Run", "Outcome", "Harness / agent", "Computer", "Started", "Duration", "Model calls", "Cost", "Gaps"]} />
        <tbody>
          {props.runs.map((r) => {
            const outcome = runOutcome(r);
            return (
              <tr>
                <th scope="row">
                  <a href={`/console/runs/${r.id}`} class="mono" title={r.id}>
                    {r.id.slice(0, 12)}…
                  </a>
                </th>
                <td class="outcome">
                  <State value={outcome.value} />
                  {r.pausedMs !== null && r.status !== "sealed" && outcome.value !== "paused" ? (
                    <>
                      {" "}
                      <State value="paused" />
                    </>
                  ) : null}
                  <div class="muted small">{outcome.reason}</div>
                </td>
                <td>{r.agent && r.agent !== r.harness ? `${r.harness} / ${r.agent}` : r.harness}</td>
                <td title={r.hostId}>{r.hostname ?? r.hostId}</td>
                <td>
                  <When ms={r.firstFrameMs} />
                </td>
                <td>{duration(runDuration(r))}</td>
                <td>
                  {r.modelCalls}
                  {r.modelFailed > 0 ? <span class="bad-text"> ({r.modelFailed} failed)</span> : null}
                </td>
                <td>
                  {usd(r.spendMicrousd)}
                  {r.unpricedCalls > 0 ? <span class="muted"> + {r.unpricedCalls} unpriced</span> : null}
                </td>
                <td>{r.gapCount}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {props.runs.length === 0 ? <p class="muted">No run matches.</p> : null}
      {nextQuery ? (
        <p>
          <a href={`/console/runs?${nextQuery}`} rel="next">
            Older runs →
          </a>
        </p>
      ) : null}
    </Layout>
  );
}
