/** @jsxImportSource hono/jsx */
import type { spendTotals } from "../../spend/query.ts";
import { Head, usd } from "../layout.tsx";

/** One row of `spendTotals(…, ["model"], …)`. */
export type ModelSpend = Awaited<ReturnType<typeof spendTotals>>[number] & { vendor?: unknown; model?: unknown };

/** Spend by model: priced calls summed, unpriced calls counted and never shown as $0. */
export function ModelSpendTable(props: { rows: ModelSpend[]; caption: string; empty: string }) {
  if (props.rows.length === 0) return <p class="muted">{props.empty}</p>;
  return (
    <table>
      <caption class="muted">{props.caption}</caption>
      <Head cols={["Model", "Vendor", "Calls", "Priced", "Unpriced", "Input tokens", "Output tokens", "Spend", "Price table"]} />
      <tbody>
        {props.rows.map((r) => (
          <tr>
            <th scope="row" class="mono">
              {String(r.model ?? "")}
            </th>
            <td>{String(r.vendor ?? "")}</td>
            <td>{r.calls}</td>
            <td>{r.priced_calls}</td>
            <td>{r.unpriced_calls}</td>
            <td>{r.input_tokens}</td>
            <td>{r.output_tokens}</td>
            <td>{r.microusd === null ? "unpriced" : `${usd(r.microusd)}${r.unpriced_calls > 0 ? " + unpriced" : ""}`}</td>
            <td class="mono">{r.price_versions.join(", ") || "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
