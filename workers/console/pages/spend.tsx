/** @jsxImportSource hono/jsx */
import type { Policy } from "../../../protocol/index.ts";
import type { SpendRow } from "../../lib/spend.ts";
import { Head, Layout, type PageContext, usd } from "../layout.tsx";
import { BudgetTable } from "./policy.tsx";
import { type ModelSpend, ModelSpendTable } from "./spend-models.tsx";

function Breakdown(props: { title: string; label: string; rows: SpendRow[] }) {
  return (
    <section>
      <h2>{props.title}</h2>
      {props.rows.length === 0 ? (
        <p class="muted">No run in this period.</p>
      ) : (
        <table>
          <Head cols={[props.label, "Runs", "Spend"]} />
          <tbody>
            {props.rows.map((r) => (
              <tr>
                <th scope="row" class="mono">
                  {r.key}
                </th>
                <td>{r.runs}</td>
                <td>{usd(r.microusd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Spend over the last days, from the run rows; the budget clauses beside it. */
export function SpendPage(props: {
  ctx: PageContext;
  days: number;
  from: string;
  spend: { day: SpendRow[]; agent: SpendRow[]; host: SpendRow[]; model: ModelSpend[] };
  budgets: Policy["budgets"];
}) {
  const total = props.spend.day.reduce((n, r) => n + r.microusd, 0);
  return (
    <Layout title="Spend" here="/console/spend" ctx={props.ctx}>
      <h1>Spend</h1>
      <p>
        {usd(total)} over the last {props.days} days (UTC, by each run's last frame), summed from the runs' own spend as the runs list shows
        it. A run whose model calls did not pass the gateway holds what its harness reported; a Cursor run holds none.
      </p>
      <Breakdown title="By day" label="Day" rows={props.spend.day} />
      <Breakdown title="By harness or agent" label="Harness or agent" rows={props.spend.agent} />
      <Breakdown title="By computer" label="Computer" rows={props.spend.host} />
      <section aria-labelledby="by-model">
        <h2 id="by-model">By model</h2>
        <ModelSpendTable
          rows={props.spend.model}
          caption={`Every model call since ${props.from} (UTC, by the day of the call), priced by the server`}
          empty="No model call in this period."
        />
      </section>
      <h2>Budget clauses</h2>
      {props.budgets.length === 0 ? (
        <p>
          No budget clause. Add one on the <a href="/console/policy">Policy</a> page.
        </p>
      ) : (
        <>
          <BudgetTable budgets={props.budgets} />
          <p class="muted">
            Each clause's use against its limit is not shown here yet: the workspace's budget counters answer only which scopes are
            exhausted.
          </p>
        </>
      )}
    </Layout>
  );
}
