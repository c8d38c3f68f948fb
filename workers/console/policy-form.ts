import { BodyRole, type Policy, UpstreamUrl } from "../../protocol/index.ts";
import { PolicyInput } from "../lib/workspace-settings.ts";

/** One tool clause row as the form holds it (text as typed). */
export interface ToolRow {
  id: string;
  tool: string;
  command: string;
  decision: string;
  reason: string;
}
/** One budget clause row as the form holds it; `limit` in dollars as typed. */
export interface BudgetRow {
  id: string;
  scope: string;
  window: string;
  limit: string;
}

/** The policy form's fields, as text (what the operator typed, kept when it is refused). */
export interface PolicyForm {
  mode: string;
  default_tool_decision: string;
  retention_mode: string;
  retention_keep: string[];
  all_models: boolean;
  models: string[];
  tools: ToolRow[];
  budgets: BudgetRow[];
  upstreams: { anthropic: string; openai: string };
}

/** Errors by field: `mode`, `tools.2.tool`, `budgets.0.limit`, `models.1`, `upstreams.openai`, or `form` for the whole. */
export type FormErrors = Record<string, string>;

/** Millionths of a dollar as the dollars an operator types (no sign, no separators): 4500 → "0.0045". */
export function dollarsText(microusd: number): string {
  const whole = Math.floor(microusd / 1_000_000);
  const frac = String(microusd % 1_000_000)
    .padStart(6, "0")
    .replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : String(whole);
}

/** Dollars as typed ("$1,250.50", "0.0045") to millionths, exactly; null when it is not an amount. */
export function parseDollars(text: string): number | null {
  const m = /^\$?(\d{1,9})(?:\.(\d{1,6}))?$/.exec(text.replace(/[\s,]/g, ""));
  if (!m) return null;
  return Number(m[1]) * 1_000_000 + Number((m[2] ?? "").padEnd(6, "0"));
}

/** The form's fields from a policy. */
export function policyForm(p: Policy): PolicyForm {
  return {
    mode: p.mode,
    default_tool_decision: p.default_tool_decision,
    retention_mode: p.retention.mode,
    retention_keep: p.retention.keep,
    all_models: p.models === null,
    models: p.models ?? [],
    tools: p.tools.map((t) => ({ id: t.id, tool: t.tool, command: t.command ?? "", decision: t.decision, reason: t.reason })),
    budgets: p.budgets.map((b) => ({ id: b.id, scope: b.scope, window: b.window, limit: dollarsText(b.limit_microusd) })),
    upstreams: { anthropic: p.upstreams?.anthropic ?? "", openai: p.upstreams?.openai ?? "" },
  };
}

const zip = <T>(form: URLSearchParams, prefix: string, keys: (keyof T & string)[]): T[] => {
  const cols = keys.map((k) => form.getAll(`${prefix}.${k}`));
  const n = Math.max(0, ...cols.map((c) => c.length));
  return Array.from({ length: n }, (_, i) => Object.fromEntries(keys.map((k, j) => [k, (cols[j]![i] ?? "").trim()])) as T);
};

/** The form's fields as posted (every row's fields come in document order, so the i-th of each name is row i). */
export function readForm(form: URLSearchParams): PolicyForm {
  return {
    mode: form.get("mode") ?? "",
    default_tool_decision: form.get("default_tool_decision") ?? "",
    retention_mode: form.get("retention_mode") ?? "",
    retention_keep: form.getAll("retention_keep"),
    all_models: form.get("all_models") === "1",
    models: form.getAll("model").map((m) => m.trim()),
    tools: zip<ToolRow>(form, "tool", ["id", "tool", "command", "decision", "reason"]),
    budgets: zip<BudgetRow>(form, "budget", ["id", "scope", "window", "limit"]),
    upstreams: { anthropic: (form.get("upstream.anthropic") ?? "").trim(), openai: (form.get("upstream.openai") ?? "").trim() },
  };
}

/** What a row-editing button asks for: `add_tool`, `remove_tool.3`, and the like; null for save. */
export function rowIntent(
  intent: string | null,
): { add: "tool" | "budget" | "model" } | { remove: "tool" | "budget" | "model"; at: number } | null {
  const add = /^add_(tool|budget|model)$/.exec(intent ?? "");
  if (add) return { add: add[1] as "tool" | "budget" | "model" };
  const remove = /^remove_(tool|budget|model)\.(\d{1,3})$/.exec(intent ?? "");
  if (remove) return { remove: remove[1] as "tool" | "budget" | "model", at: Number(remove[2]) };
  return null;
}

/** The form with a row added or removed (nothing is saved). */
export function editRows(f: PolicyForm, edit: NonNullable<ReturnType<typeof rowIntent>>): PolicyForm {
  const rows = { tool: "tools", budget: "budgets", model: "models" } as const;
  const empty = {
    tool: { id: "", tool: "", command: "", decision: "deny", reason: "" },
    budget: { id: "", scope: "workspace", window: "day", limit: "" },
    model: "",
  };
  if ("add" in edit) return { ...f, [rows[edit.add]]: [...f[rows[edit.add]], empty[edit.add]] };
  return { ...f, [rows[edit.remove]]: (f[rows[edit.remove]] as unknown[]).filter((_, i) => i !== edit.at) };
}

const oneOf = (v: string, options: readonly string[]) => options.includes(v);
const words = (options: readonly string[]) => `${options.slice(0, -1).join(", ")} or ${options.at(-1)}`;

/**
 * Checks every field and says what is wrong with each in a sentence (all of them at once), then
 * builds the API's own `PolicyInput` from the rows that are not blank. Anything the API's schema
 * still refuses is put next to its field too: the page refuses exactly what `PUT …/policy` refuses.
 */
export function checkForm(f: PolicyForm): { input: PolicyInput | null; errors: FormErrors } {
  const e: FormErrors = {};
  if (!oneOf(f.mode, ["enforce", "observe"])) e.mode = "Choose enforce or observe.";
  if (!oneOf(f.default_tool_decision, ["none", "allow", "ask", "deny"])) e.default_tool_decision = "Choose none, allow, ask or deny.";
  if (!oneOf(f.retention_mode, ["keep", "digest_only"])) e.retention = "Choose keep or digest only.";
  else if (f.retention_keep.some((r) => !oneOf(r, BodyRole.options))) e.retention = `Body roles are ${words(BodyRole.options)}.`;
  const tools = f.tools.filter((t) => t.id || t.tool || t.command || t.reason);
  f.tools.forEach((t, i) => {
    if (!tools.includes(t)) return;
    if (!t.id) e[`tools.${i}.id`] = "Give the clause an id, such as no-force-push.";
    else if (t.id.length > 64) e[`tools.${i}.id`] = "An id is at most 64 characters.";
    if (!t.tool) e[`tools.${i}.tool`] = "Name the tool, or a pattern such as Bash or mcp__github__*.";
    else if (t.tool.length > 256) e[`tools.${i}.tool`] = "A tool pattern is at most 256 characters.";
    if (t.command.length > 256) e[`tools.${i}.command`] = "A command pattern is at most 256 characters.";
    if (!oneOf(t.decision, ["allow", "ask", "deny"])) e[`tools.${i}.decision`] = "Choose allow, ask or deny.";
    if (t.reason.length > 512) e[`tools.${i}.reason`] = "A reason is at most 512 characters.";
  });
  if (tools.length > 500) e.tools = "A policy holds at most 500 tool clauses.";
  const budgets = f.budgets.filter((b) => b.id || b.limit);
  const limits = new Map<BudgetRow, number>();
  f.budgets.forEach((b, i) => {
    if (!budgets.includes(b)) return;
    if (!b.id) e[`budgets.${i}.id`] = "Give the budget an id, such as team-daily.";
    else if (b.id.length > 64) e[`budgets.${i}.id`] = "An id is at most 64 characters.";
    else if (budgets.some((o) => o !== b && o.id === b.id && f.budgets.indexOf(o) < i))
      e[`budgets.${i}.id`] = "Another budget above has this id: each budget needs its own.";
    if (!oneOf(b.scope, ["run", "host", "workspace"])) e[`budgets.${i}.scope`] = "Choose a run, a computer or the workspace.";
    if (!oneOf(b.window, ["run", "day", "month"])) e[`budgets.${i}.window`] = "Choose the run's lifetime, a day or a month.";
    const micro = parseDollars(b.limit);
    if (micro === null) e[`budgets.${i}.limit`] = "Write the limit in dollars, such as 25 or 0.50.";
    else limits.set(b, micro);
  });
  if (budgets.length > 50) e.budgets = "A policy holds at most 50 budgets.";
  const models = f.models.filter((m) => m.length > 0);
  f.models.forEach((m, i) => {
    if (m.length > 256) e[`models.${i}`] = "A model name or pattern is at most 256 characters.";
  });
  if (!f.all_models && models.length > 200) e.models = "A policy lists at most 200 models.";
  for (const vendor of ["anthropic", "openai"] as const) {
    const url = f.upstreams[vendor];
    if (url && !UpstreamUrl.safeParse(url).success)
      e[`upstreams.${vendor}`] =
        "Write an http or https address with no user name, password, query or fragment, such as https://llm-proxy.example.com.";
  }
  const upstreams = Object.fromEntries(Object.entries(f.upstreams).filter(([, v]) => v));
  const input = {
    mode: f.mode,
    default_tool_decision: f.default_tool_decision,
    retention: { mode: f.retention_mode, keep: f.retention_keep },
    models: f.all_models ? null : models,
    tools: tools.map((t) => ({
      id: t.id,
      tool: t.tool,
      ...(t.command ? { command: t.command } : {}),
      decision: t.decision,
      reason: t.reason,
    })),
    budgets: budgets.map((b) => ({ id: b.id, scope: b.scope, window: b.window, limit_microusd: limits.get(b) ?? -1 })),
    ...(Object.keys(upstreams).length > 0 ? { upstreams } : {}),
  };
  if (Object.keys(e).length > 0) return { input: null, errors: e };
  const parsed = PolicyInput.safeParse(input);
  if (parsed.success) return { input: parsed.data, errors: e };
  // A rule this page does not check itself: said next to the field the schema names (row i of the
  // input is the i-th row that is not blank).
  const formRow = {
    tools: f.tools.map((_, i) => i).filter((i) => tools.includes(f.tools[i]!)),
    budgets: f.budgets.map((_, i) => i).filter((i) => budgets.includes(f.budgets[i]!)),
  };
  for (const issue of parsed.error.issues) {
    const [top = "form", row, field] = issue.path.map(String);
    const rows = top === "tools" || top === "budgets" ? formRow[top] : null;
    const key =
      rows && row !== undefined
        ? [top, rows[Number(row)], field === "limit_microusd" ? "limit" : field].filter((x) => x !== undefined).join(".")
        : top;
    e[key] ??= "This value is not accepted here.";
  }
  return { input: null, errors: e };
}
