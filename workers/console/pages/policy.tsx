/** @jsxImportSource hono/jsx */
import type { Policy } from "../../../protocol/index.ts";
import type { FormErrors, PolicyForm } from "../policy-form.ts";
import { Layout, type PageContext, usd, Head } from "../layout.tsx";
import { PolicyFormView } from "./policy-form.tsx";

/** The budget clauses with their limits (the Policy page; the Spend page shows their use). */
export function BudgetTable(props: { budgets: Policy["budgets"] }) {
  return (
    <table>
      <Head cols={["Id", "Scope", "Window", "Limit"]} />
      <tbody>
        {props.budgets.map((b) => (
          <tr>
            <th scope="row">{b.id}</th>
            <td>{b.scope}</td>
            <td>{b.window}</td>
            <td>{usd(b.limit_microusd)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The workspace's policy: its clauses as tables, and one form to change them, with errors next to each field. */
export function PolicyPage(props: {
  ctx: PageContext;
  policy: Policy;
  etag: string;
  form: PolicyForm;
  errors: FormErrors;
  /** After a save: what it says, and whether a computer has not applied it yet. */
  saved: { text: string; bad: boolean } | null;
}) {
  const p = props.policy;
  const e = props.errors;
  const count = Object.keys(e).length;
  return (
    <Layout title="Policy" here="/console/policy" ctx={props.ctx}>
      <h1>Policy</h1>
      <p class="muted">
        ETag <code>{props.etag}</code>, issued {new Date(p.issued_ms).toISOString()}. A saved change is signed and pushed to every connected
        recorder at once; the page says which computers had not applied it when it answered.
      </p>
      {props.saved ? (
        <p class={props.saved.bad ? "notice bad" : "notice"} role="status">
          {props.saved.text}
        </p>
      ) : null}
      {count > 0 ? (
        <p class="notice bad" role="alert">
          The policy was not changed: {count === 1 ? "one field needs" : `${count} fields need`} a change, each marked below.
        </p>
      ) : null}
      <h2>Tool clauses (first match decides)</h2>
      {p.tools.length === 0 ? (
        <p>No clause: every tool call gets the default ({p.default_tool_decision}).</p>
      ) : (
        <table>
          <Head cols={["Id", "Tool", "Command", "Decision", "Reason"]} />
          <tbody>
            {p.tools.map((t) => (
              <tr>
                <th scope="row">{t.id}</th>
                <td class="mono">{t.tool}</td>
                <td class="mono">{t.command ?? "any"}</td>
                <td>{t.decision}</td>
                <td>{t.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Models</h2>
      <p>{p.models === null ? "Every model may be called." : p.models.length === 0 ? "No model may be called." : p.models.join(", ")}</p>
      <h2>Budgets</h2>
      {p.budgets.length === 0 ? <p>No budget clause.</p> : <BudgetTable budgets={p.budgets} />}
      <h2>Upstreams</h2>
      <p>
        {p.upstreams?.anthropic || p.upstreams?.openai
          ? [
              p.upstreams.anthropic ? `Anthropic calls go to ${p.upstreams.anthropic}` : "",
              p.upstreams.openai ? `OpenAI calls go to ${p.upstreams.openai}` : "",
            ]
              .filter(Boolean)
              .join("; ")
          : "Each vendor's own API."}
      </p>
      <h2>Mode and retention</h2>
      <p>
        Mode <strong>{p.mode}</strong>; retention <strong>{p.retention.mode}</strong>
        {p.retention.mode === "keep" ? ` (keeps ${p.retention.keep.join(", ") || "no role"})` : ""}.
      </p>
      <h2 id="edit">Change the policy</h2>
      <PolicyFormView csrf={props.ctx.csrf} etag={props.etag} form={props.form} errors={e} />
    </Layout>
  );
}
