/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import type { BudgetUse } from "../../lib/budget-use.ts";
import type { SpendRow } from "../../lib/spend.ts";
import { BudgetUseTable } from "../budget-use.tsx";
import { daysBetween, SpendByDayChart } from "../chart.tsx";
import { Head, Layout, type PageContext, usd, When } from "../layout.tsx";
import { type ModelSpend, ModelSpendTable } from "./spend-models.tsx";

function Breakdown(props: { title: string; label: string; rows: SpendRow[]; chart?: Child }) {
  return (
    <section>
      <h2>{props.title}</h2>
      {props.chart}
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

/** Spend over the last days, by the day of each call's receipt and charted, by agent and by computer; each budget clause's use against its limit. */
export function SpendPage(props: {
  ctx: PageContext;
  days: number;
  from: string;
  spend: { day: SpendRow[]; agent: SpendRow[]; host: SpendRow[]; model: ModelSpend[] };
  budgets: BudgetUse;
}) {
  const total = props.spend.day.reduce((n, r) => n + r.microusd, 0);
  const days = daysBetween(props.from, new Date(props.budgets.now_ms).toISOString().slice(0, 10));
  const byDay = new Map(props.spend.day.map((r) => [r.key, r.microusd]));
  const chart = (
    <SpendByDayChart days={days} microusd={byDay} title={`Spend by day, ${days[0]} to ${days.at(-1)} (UTC): ${usd(total)} in all`} />
  );
  return (
    <Layout title="Spend" here="/console/spend" ctx={props.ctx}>
      <h1>Spend</h1>
      <p>
        {usd(total)} over the last {props.days} days: every model call the server priced, on the UTC day the server received it (as{" "}
        <code>GET /v1/spend?group_by=day</code> answers), so a run that crosses midnight counts on both days. By harness or agent and by
        computer: the same calls, by the run each belongs to. A run whose model calls did not pass the gateway holds what its harness
        reported; a Cursor run holds none.
      </p>
      <Breakdown title="By day" label="Day" rows={props.spend.day} chart={chart} />
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
      <section aria-labelledby="budgets">
        <h2 id="budgets">Budgets: use against each clause</h2>
        {props.budgets.clauses.length === 0 ? (
          <p>
            No budget clause. Add one on the <a href="/console/policy">Policy</a> page.
          </p>
        ) : (
          <>
            <BudgetUseTable
              clauses={props.budgets.clauses}
              caption="Spend in each clause's current window: priced model calls plus budget the gateways hold leased, as the server enforces it"
            />
            <p class="muted">
              As of <When ms={props.budgets.now_ms} />. A scope is exhausted once its spend reaches the limit: its model calls are refused
              until the window ends or the limit is raised. Per-run clauses show the runs with the most spend.
            </p>
          </>
        )}
      </section>
    </Layout>
  );
}
