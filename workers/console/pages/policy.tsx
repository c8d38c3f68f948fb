/** @jsxImportSource hono/jsx */
import { BodyRole, type Policy } from "../../../protocol/index.ts";
import { Layout, type PageContext, usd, Head } from "../layout.tsx";

/** The policy form's fields, as text (what the operator typed, kept when it is refused). */
export interface PolicyForm {
  mode: string;
  default_tool_decision: string;
  retention_mode: string;
  retention_keep: string[];
  all_models: boolean;
  models: string;
  tools: string;
  budgets: string;
}

/** The form's fields from a policy. */
export function policyForm(p: Policy): PolicyForm {
  return {
    mode: p.mode,
    default_tool_decision: p.default_tool_decision,
    retention_mode: p.retention.mode,
    retention_keep: p.retention.keep,
    all_models: p.models === null,
    models: (p.models ?? []).join("\n"),
    tools: JSON.stringify(p.tools, null, 2),
    budgets: JSON.stringify(p.budgets, null, 2),
  };
}

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

function FieldError(props: { id: string; errors: Record<string, string> }) {
  const e = props.errors[props.id];
  return e ? (
    <p class="field-error" id={`${props.id}-error`} role="alert">
      {e}
    </p>
  ) : null;
}

const described = (id: string, errors: Record<string, string>) => (errors[id] ? `${id}-error` : undefined);

/** The workspace's policy: its clauses as tables, and one form to change them, with errors next to each field. */
export function PolicyPage(props: {
  ctx: PageContext;
  policy: Policy;
  etag: string;
  form: PolicyForm;
  errors: Record<string, string>;
  saved: boolean;
}) {
  const p = props.policy;
  const f = props.form;
  const e = props.errors;
  return (
    <Layout title="Policy" here="/console/policy" ctx={props.ctx}>
      <h1>Policy</h1>
      <p class="muted">
        ETag <code>{props.etag}</code>, issued {new Date(p.issued_ms).toISOString()}. Collectors read the signed policy when they next ask
        for it (live push comes with issue 12).
      </p>
      {props.saved ? (
        <p class="notice" role="status">
          Saved: the policy is signed and served with a new ETag.
        </p>
      ) : null}
      {Object.keys(e).length > 0 ? (
        <p class="notice bad" role="alert">
          The policy was not changed: see the fields marked below.
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
      <h2>Mode and retention</h2>
      <p>
        Mode <strong>{p.mode}</strong>; retention <strong>{p.retention.mode}</strong>
        {p.retention.mode === "keep" ? ` (keeps ${p.retention.keep.join(", ") || "no role"})` : ""}.
      </p>
      <h2 id="edit">Change the policy</h2>
      <form method="post" action="/console/policy" novalidate>
        <input type="hidden" name="csrf" value={props.ctx.csrf} />
        <input type="hidden" name="etag" value={props.etag} />
        <label for="mode">Mode</label>
        <select id="mode" name="mode" aria-describedby={described("mode", e)}>
          {["enforce", "observe"].map((m) => (
            <option value={m} selected={f.mode === m}>
              {m}
            </option>
          ))}
        </select>
        <FieldError id="mode" errors={e} />
        <label for="default_tool_decision">Default for a tool no clause matches</label>
        <select id="default_tool_decision" name="default_tool_decision" aria-describedby={described("default_tool_decision", e)}>
          {["none", "allow", "ask", "deny"].map((m) => (
            <option value={m} selected={f.default_tool_decision === m}>
              {m === "none" ? "none (the harness decides)" : m}
            </option>
          ))}
        </select>
        <FieldError id="default_tool_decision" errors={e} />
        <label for="retention_mode">Retention</label>
        <select id="retention_mode" name="retention_mode" aria-describedby={described("retention", e)}>
          {["keep", "digest_only"].map((m) => (
            <option value={m} selected={f.retention_mode === m}>
              {m}
            </option>
          ))}
        </select>
        <fieldset>
          <legend>Bodies kept (under keep)</legend>
          {BodyRole.options.map((role) => (
            <label>
              <input type="checkbox" name="retention_keep" value={role} checked={f.retention_keep.includes(role)} /> {role}
            </label>
          ))}
        </fieldset>
        <FieldError id="retention" errors={e} />
        <label>
          <input type="checkbox" name="all_models" value="1" checked={f.all_models} /> Every model may be called
        </label>
        <label for="models">Model allow-list (one name glob a line; used when the box above is not ticked)</label>
        <textarea id="models" name="models" aria-describedby={described("models", e)}>
          {f.models}
        </textarea>
        <FieldError id="models" errors={e} />
        <label for="tools">Tool clauses (JSON array)</label>
        <textarea id="tools" name="tools" aria-describedby={described("tools", e)}>
          {f.tools}
        </textarea>
        <FieldError id="tools" errors={e} />
        <label for="budgets">Budget clauses (JSON array)</label>
        <textarea id="budgets" name="budgets" aria-describedby={described("budgets", e)}>
          {f.budgets}
        </textarea>
        <FieldError id="budgets" errors={e} />
        <p>
          <button type="submit">Save and sign the policy</button>
        </p>
      </form>
    </Layout>
  );
}
