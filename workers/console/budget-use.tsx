/** @jsxImportSource hono/jsx */
import type { ClauseUse, ScopeUse } from "../workspace/budgets.ts";
import { Head, State, usd, When } from "./layout.tsx";

/** Whole percent of the limit, rounded down (99.6% is not shown as 100% while the scope is not exhausted). */
function percent(spent: number, limit: number): string {
  return limit === 0 ? "—" : `${Math.floor((spent * 100) / limit)}%`;
}

function who(u: ScopeUse) {
  if (u.run) return <a href={`/console/runs/${u.run}`}>{u.run}</a>;
  if (u.host) return <span class="mono">{u.host}</span>;
  return <span>the workspace</span>;
}

function windowWord(c: ClauseUse): string {
  return c.window === "run" ? "the run's lifetime" : c.window === "day" ? "today (UTC)" : "this month (UTC)";
}

/**
 * Each clause's use against its limit: one row per scope instance with spend (priced plus leased),
 * a meter, the percentage, exhausted or not (the same rule that refuses calls), and when the window
 * ends. A `<meter>` carries the bar: native, labelled, and styled without inline CSS.
 */
export function BudgetUseTable(props: { clauses: ClauseUse[]; caption: string }) {
  return (
    <table>
      <caption class="muted">{props.caption}</caption>
      <Head cols={["Clause", "Applies to", "Spent", "Limit", "Use", "State", "Window ends"]} />
      <tbody>
        {props.clauses.flatMap((c) => {
          const label = `${c.budget}: ${c.scope} budget for ${windowWord(c)}`;
          const rows = c.uses.map((u) => {
            const exhausted = u.spent_microusd >= c.limit_microusd;
            return (
              <tr>
                <th scope="row">{label}</th>
                <td>{who(u)}</td>
                <td>{usd(u.spent_microusd)}</td>
                <td>{usd(c.limit_microusd)}</td>
                <td class="use">
                  <meter
                    min={0}
                    max={Math.max(1, c.limit_microusd)}
                    low={Math.floor(c.limit_microusd / 2)}
                    high={Math.floor(c.limit_microusd * 0.8)}
                    optimum={0}
                    value={Math.min(u.spent_microusd, Math.max(1, c.limit_microusd))}
                    aria-label={`${label}, ${u.run ?? u.host ?? "the workspace"}: ${percent(u.spent_microusd, c.limit_microusd)} of the limit`}
                  >
                    {percent(u.spent_microusd, c.limit_microusd)}
                  </meter>{" "}
                  {percent(u.spent_microusd, c.limit_microusd)}
                </td>
                <td>
                  <State value={exhausted ? "exhausted" : "within"} />
                </td>
                <td>{c.until_ms === null ? <span class="muted">when the run ends</span> : <When ms={c.until_ms} />}</td>
              </tr>
            );
          });
          if (c.uses.length === 0)
            rows.push(
              <tr>
                <th scope="row">{label}</th>
                <td colspan={6} class="muted">
                  Nothing spent in this window yet; the limit is {usd(c.limit_microusd)} for each{" "}
                  {c.scope === "host" && c.window !== "run" ? "computer" : "run"}.
                </td>
              </tr>,
            );
          if (c.more > 0)
            rows.push(
              <tr>
                <th scope="row">{label}</th>
                <td colspan={6} class="muted">
                  And {c.more} more {c.scope === "host" && c.window !== "run" ? "computers" : "runs"} with less spend, not shown.
                </td>
              </tr>,
            );
          return rows;
        })}
      </tbody>
    </table>
  );
}
