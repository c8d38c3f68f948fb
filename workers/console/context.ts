import type { Context } from "hono";
import type { PageContext } from "./layout.tsx";
import { type ConsoleEnv, formOf, requireCsrf } from "./session.ts";

/** What a signed-in page knows of its operator, from the session. */
export const pageCtx = (c: Context<ConsoleEnv>): PageContext => ({
  workspaceId: c.var.workspaceId,
  tokenId: c.var.tokenId,
  scope: c.var.scope,
  csrf: c.var.csrf,
});

/** The form of a state-changing request, its CSRF token checked against the session's. */
export function checkedForm(c: Context<ConsoleEnv>): URLSearchParams {
  const form = formOf(c);
  requireCsrf(c, form, c.var.csrf);
  return form;
}
