/** @jsxImportSource hono/jsx */
import { BodyRole } from "../../../protocol/index.ts";
import type { FormErrors, PolicyForm } from "../policy-form.ts";
import { Head } from "../layout.tsx";

const errId = (key: string) => `err-${key.replaceAll(".", "-")}`;

function FieldError(props: { at: string; errors: FormErrors }) {
  const e = props.errors[props.at];
  return e ? (
    <p class="field-error" id={errId(props.at)}>
      {e}
    </p>
  ) : null;
}

/** The attributes that tie a control to its error: described by it, and marked invalid. */
const tied = (at: string, errors: FormErrors) =>
  errors[at] ? { "aria-describedby": errId(at), "aria-invalid": "true" as const } : ({} as Record<string, never>);

function Select(props: {
  name: string;
  id: string;
  value: string;
  options: [string, string][];
  at: string;
  errors: FormErrors;
  label?: string;
}) {
  return (
    <select id={props.id} name={props.name} aria-label={props.label} {...tied(props.at, props.errors)}>
      {props.options.map(([v, text]) => (
        <option value={v} selected={props.value === v}>
          {text}
        </option>
      ))}
    </select>
  );
}

/** A row's Remove button: a submit of the whole form that drops that row (nothing is saved). */
function Remove(props: { what: string; i: number; label: string }) {
  return (
    <button type="submit" name="intent" value={`remove_${props.what}.${props.i}`} aria-label={props.label}>
      Remove
    </button>
  );
}

function ToolRows(props: { form: PolicyForm; errors: FormErrors }) {
  const e = props.errors;
  return (
    <fieldset class="rows">
      <legend>Tool clauses: the first one that matches decides</legend>
      {props.form.tools.length === 0 ? <p class="muted">No clause: every tool call gets the default above.</p> : null}
      <table>
        <Head cols={["Id", "Tool (pattern)", "Command (pattern, optional)", "Decision", "Reason the agent is told", ""]} />
        <tbody>
          {props.form.tools.map((t, i) => (
            <tr>
              <td>
                <input name="tool.id" value={t.id} aria-label={`Tool clause ${i + 1}: id`} {...tied(`tools.${i}.id`, e)} />
                <FieldError at={`tools.${i}.id`} errors={e} />
              </td>
              <td>
                <input name="tool.tool" value={t.tool} aria-label={`Tool clause ${i + 1}: tool`} {...tied(`tools.${i}.tool`, e)} />
                <FieldError at={`tools.${i}.tool`} errors={e} />
              </td>
              <td>
                <input
                  name="tool.command"
                  value={t.command}
                  aria-label={`Tool clause ${i + 1}: command`}
                  {...tied(`tools.${i}.command`, e)}
                />
                <FieldError at={`tools.${i}.command`} errors={e} />
              </td>
              <td>
                <Select
                  name="tool.decision"
                  id={`tool-decision-${i}`}
                  label={`Tool clause ${i + 1}: decision`}
                  value={t.decision}
                  options={[
                    ["deny", "deny"],
                    ["ask", "ask a person"],
                    ["allow", "allow"],
                  ]}
                  at={`tools.${i}.decision`}
                  errors={e}
                />
                <FieldError at={`tools.${i}.decision`} errors={e} />
              </td>
              <td>
                <input name="tool.reason" value={t.reason} aria-label={`Tool clause ${i + 1}: reason`} {...tied(`tools.${i}.reason`, e)} />
                <FieldError at={`tools.${i}.reason`} errors={e} />
              </td>
              <td>
                <Remove what="tool" i={i} label={`Remove tool clause ${i + 1}`} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <FieldError at="tools" errors={e} />
      <button type="submit" name="intent" value="add_tool">
        Add a tool clause
      </button>
    </fieldset>
  );
}

function BudgetRows(props: { form: PolicyForm; errors: FormErrors }) {
  const e = props.errors;
  return (
    <fieldset class="rows">
      <legend>Budgets: a spend limit per run, computer or workspace</legend>
      {props.form.budgets.length === 0 ? <p class="muted">No budget.</p> : null}
      <table>
        <Head cols={["Id", "For each", "Window", "Limit (US dollars)", ""]} />
        <tbody>
          {props.form.budgets.map((b, i) => (
            <tr>
              <td>
                <input name="budget.id" value={b.id} aria-label={`Budget ${i + 1}: id`} {...tied(`budgets.${i}.id`, e)} />
                <FieldError at={`budgets.${i}.id`} errors={e} />
              </td>
              <td>
                <Select
                  name="budget.scope"
                  id={`budget-scope-${i}`}
                  label={`Budget ${i + 1}: for each`}
                  value={b.scope}
                  options={[
                    ["workspace", "the workspace"],
                    ["host", "computer"],
                    ["run", "run"],
                  ]}
                  at={`budgets.${i}.scope`}
                  errors={e}
                />
                <FieldError at={`budgets.${i}.scope`} errors={e} />
              </td>
              <td>
                <Select
                  name="budget.window"
                  id={`budget-window-${i}`}
                  label={`Budget ${i + 1}: window`}
                  value={b.window}
                  options={[
                    ["day", "a day (UTC)"],
                    ["month", "a month (UTC)"],
                    ["run", "the run's lifetime"],
                  ]}
                  at={`budgets.${i}.window`}
                  errors={e}
                />
                <FieldError at={`budgets.${i}.window`} errors={e} />
              </td>
              <td>
                <input
                  name="budget.limit"
                  value={b.limit}
                  inputmode="decimal"
                  size={10}
                  aria-label={`Budget ${i + 1}: limit in dollars`}
                  {...tied(`budgets.${i}.limit`, e)}
                />
                <FieldError at={`budgets.${i}.limit`} errors={e} />
              </td>
              <td>
                <Remove what="budget" i={i} label={`Remove budget ${i + 1}`} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <FieldError at="budgets" errors={e} />
      <button type="submit" name="intent" value="add_budget">
        Add a budget
      </button>
    </fieldset>
  );
}

function ModelRows(props: { form: PolicyForm; errors: FormErrors }) {
  const e = props.errors;
  return (
    <fieldset class="rows">
      <legend>Models the gateway may forward</legend>
      <label>
        <input type="checkbox" name="all_models" value="1" checked={props.form.all_models} /> Every model (the list below is not used)
      </label>
      <ul class="plain">
        {props.form.models.map((m, i) => (
          <li>
            <input name="model" value={m} aria-label={`Model ${i + 1} (a name or pattern, such as claude-*)`} {...tied(`models.${i}`, e)} />{" "}
            <Remove what="model" i={i} label={`Remove model ${i + 1}`} />
            <FieldError at={`models.${i}`} errors={e} />
          </li>
        ))}
      </ul>
      {!props.form.all_models && props.form.models.filter((m) => m).length === 0 ? (
        <p class="muted">With the box unticked and no model listed, no model may be called.</p>
      ) : null}
      <FieldError at="models" errors={e} />
      <button type="submit" name="intent" value="add_model">
        Add a model
      </button>
    </fieldset>
  );
}

/**
 * The policy as a form of fields: one row per clause (added and removed with buttons that submit
 * the form without saving), each error under its field and every error at once. No script: the
 * first submit button is Save, so Enter in a field saves.
 */
export function PolicyFormView(props: { csrf: string; etag: string; form: PolicyForm; errors: FormErrors }) {
  const f = props.form;
  const e = props.errors;
  return (
    <form method="post" action="/console/policy" novalidate>
      <input type="hidden" name="csrf" value={props.csrf} />
      <input type="hidden" name="etag" value={props.etag} />
      <p class="actions">
        <button type="submit" name="intent" value="save">
          Save and sign the policy
        </button>
      </p>
      <label for="mode">Mode</label>
      <Select
        name="mode"
        id="mode"
        value={f.mode}
        options={[
          ["enforce", "enforce: refuse what the policy refuses"],
          ["observe", "observe: record what it would refuse, refuse nothing"],
        ]}
        at="mode"
        errors={e}
      />
      <FieldError at="mode" errors={e} />
      <label for="default_tool_decision">Default for a tool no clause matches</label>
      <Select
        name="default_tool_decision"
        id="default_tool_decision"
        value={f.default_tool_decision}
        options={[
          ["none", "none (the harness decides)"],
          ["allow", "allow"],
          ["ask", "ask a person"],
          ["deny", "deny"],
        ]}
        at="default_tool_decision"
        errors={e}
      />
      <FieldError at="default_tool_decision" errors={e} />
      <ToolRows form={f} errors={e} />
      <ModelRows form={f} errors={e} />
      <BudgetRows form={f} errors={e} />
      <fieldset class="rows">
        <legend>Upstreams: where the gateway sends each vendor's calls (empty: the vendor's own)</legend>
        <label for="upstream-anthropic">Anthropic base URL</label>
        <input
          id="upstream-anthropic"
          name="upstream.anthropic"
          value={f.upstreams.anthropic}
          size={48}
          {...tied("upstreams.anthropic", e)}
        />
        <FieldError at="upstreams.anthropic" errors={e} />
        <label for="upstream-openai">OpenAI base URL</label>
        <input id="upstream-openai" name="upstream.openai" value={f.upstreams.openai} size={48} {...tied("upstreams.openai", e)} />
        <FieldError at="upstreams.openai" errors={e} />
        <p class="muted">A company proxy or a LiteLLM in front of the vendor; the caller's own credentials go there.</p>
      </fieldset>
      <label for="retention_mode">Retention</label>
      <Select
        name="retention_mode"
        id="retention_mode"
        value={f.retention_mode}
        options={[
          ["keep", "keep the bodies ticked below"],
          ["digest_only", "digests only: keep no body"],
        ]}
        at="retention"
        errors={e}
      />
      <fieldset>
        <legend>Bodies kept (under keep)</legend>
        {BodyRole.options.map((role) => (
          <label>
            <input type="checkbox" name="retention_keep" value={role} checked={f.retention_keep.includes(role)} /> {role}
          </label>
        ))}
      </fieldset>
      <FieldError at="retention" errors={e} />
      <FieldError at="form" errors={e} />
      <p>
        <button type="submit" name="intent" value="save">
          Save and sign the policy
        </button>
      </p>
    </form>
  );
}
