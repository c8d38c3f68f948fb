/** @jsxImportSource hono/jsx */
import { AppError } from "../errors.ts";
import { signedPolicy } from "../lib/policy-store.ts";
import type { Propagation } from "../lib/push.ts";
import { replacePolicy } from "../lib/workspace-settings.ts";
import { type PageContext, plural } from "./layout.tsx";
import { checkForm, editRows, type FormErrors, type PolicyForm, policyForm, readForm, rowIntent } from "./policy-form.ts";
import { PolicyPage } from "./pages/policy.tsx";
import { notApplied } from "./propagation.ts";

function savedNotice(p: Propagation): { text: string; bad: boolean } {
  const late = notApplied(p.not_applied, p.more);
  const reached = late ?? (p.hosts === 0 ? "" : `Every computer's recorder applied it (${plural(p.hosts, "computer")}).`);
  return { text: `Saved: the policy is signed and served with a new ETag. ${reached}`.trim(), bad: late !== null };
}

async function page(env: Env, ctx: PageContext, form: PolicyForm | null, errors: FormErrors, saved: Propagation | null) {
  const { policy, etag } = await signedPolicy(env, ctx.workspaceId);
  return (
    <PolicyPage
      ctx={ctx}
      policy={policy}
      etag={etag}
      form={form ?? policyForm(policy)}
      errors={errors}
      saved={saved ? savedNotice(saved) : null}
    />
  );
}

/** The policy page, read from the same signed policy the API serves. */
export function policyPage(env: Env, ctx: PageContext) {
  return page(env, ctx, null, {}, null);
}

/**
 * A post of the policy form: a row added or removed (shown again, nothing saved), or a save. A
 * save goes through the API's own `PolicyInput`, so the page refuses what `PUT …/policy` refuses,
 * every error next to its field; nothing is saved then.
 */
export async function policyEdit(env: Env, ctx: PageContext, posted: URLSearchParams) {
  const f = readForm(posted);
  const edit = rowIntent(posted.get("intent"));
  if (edit) return { status: 200 as const, page: await page(env, ctx, editRows(f, edit), {}, null) };
  const { input, errors } = checkForm(f);
  if (input) {
    try {
      const { propagation } = await replacePolicy(env, ctx.workspaceId, input);
      return { status: 200 as const, page: await page(env, ctx, null, {}, propagation) };
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      errors.form = err.message;
    }
  }
  return { status: 400 as const, page: await page(env, ctx, f, errors, null) };
}
