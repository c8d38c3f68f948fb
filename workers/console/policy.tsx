/** @jsxImportSource hono/jsx */
import { AppError } from "../errors.ts";
import { signedPolicy } from "../lib/policy-store.ts";
import { PolicyInput, replacePolicy } from "../lib/workspace-settings.ts";
import type { PageContext } from "./layout.tsx";
import { type PolicyForm, PolicyPage, policyForm } from "./pages/policy.tsx";

/** The policy page, read from the same signed policy the API serves. */
export async function policyPage(env: Env, ctx: PageContext, saved = false) {
  const { policy, etag } = await signedPolicy(env, ctx.workspaceId);
  return <PolicyPage ctx={ctx} policy={policy} etag={etag} form={policyForm(policy)} errors={{}} saved={saved} />;
}

function jsonField(text: string, field: string, errors: Record<string, string>): unknown {
  try {
    return JSON.parse(text || "[]");
  } catch (err) {
    errors[field] = `Not JSON: ${(err as Error).message}`;
    return undefined;
  }
}

// Which form field a policy path belongs to.
const FIELD: Record<string, string> = {
  mode: "mode",
  default_tool_decision: "default_tool_decision",
  retention: "retention",
  models: "models",
  tools: "tools",
  budgets: "budgets",
};

/**
 * A policy change from the form: parsed into the API's own `PolicyInput`, so the page refuses what
 * `PUT /v1/workspaces/:id/policy` refuses, each error next to its field; nothing is saved then.
 */
export async function policyEdit(env: Env, ctx: PageContext, form: URLSearchParams) {
  const f: PolicyForm = {
    mode: form.get("mode") ?? "",
    default_tool_decision: form.get("default_tool_decision") ?? "",
    retention_mode: form.get("retention_mode") ?? "",
    retention_keep: form.getAll("retention_keep"),
    all_models: form.get("all_models") === "1",
    models: form.get("models") ?? "",
    tools: form.get("tools") ?? "",
    budgets: form.get("budgets") ?? "",
  };
  const errors: Record<string, string> = {};
  const input = {
    mode: f.mode,
    default_tool_decision: f.default_tool_decision,
    retention: { mode: f.retention_mode, keep: f.retention_keep },
    models: f.all_models
      ? null
      : f.models
          .split("\n")
          .map((m) => m.trim())
          .filter((m) => m.length > 0),
    tools: jsonField(f.tools, "tools", errors),
    budgets: jsonField(f.budgets, "budgets", errors),
  };
  const parsed = PolicyInput.safeParse(input);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const field = FIELD[String(issue.path[0])] ?? "tools";
      if (errors[field]) continue;
      const at = issue.path.slice(1).map(String).join(".");
      errors[field] = `${at ? `${at}: ` : ""}${issue.message}`;
    }
  }
  if (parsed.success && Object.keys(errors).length === 0) {
    try {
      await replacePolicy(env, ctx.workspaceId, parsed.data);
      return { status: 200 as const, page: await policyPage(env, ctx, true) };
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      errors.tools = err.message;
    }
  }
  const { policy, etag } = await signedPolicy(env, ctx.workspaceId);
  return { status: 400 as const, page: <PolicyPage ctx={ctx} policy={policy} etag={etag} form={f} errors={errors} saved={false} /> };
}
