import { Hono } from "hono";
import { z } from "zod";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db } from "../db/client.ts";
import { budgetUseOf } from "../lib/budget-use.ts";
import { SPEND_GROUPS, spendTotals } from "../spend/query.ts";
import { valid } from "../validate.ts";

const Day = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/, "a UTC day, YYYY-MM-DD");
const Query = z
  .strictObject({
    group_by: z
      .string()
      .default("")
      .transform((v) => (v === "" ? [] : v.split(",")))
      .pipe(
        z
          .array(z.enum(SPEND_GROUPS))
          .max(3)
          .refine((g) => new Set(g).size === g.length, "a group is named twice"),
      ),
    from: Day.optional(),
    to: Day.optional(),
    host: z.string().min(1).max(64).optional(),
    agent: z.string().min(1).max(64).optional(),
    run: z.string().min(1).max(64).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(200),
  })
  .refine((q) => !q.from || !q.to || q.from <= q.to, { message: "from is after to", path: ["from"] });

const BudgetsQuery = z.strictObject({
  host: z.string().min(1).max(64).optional(),
  run: z.string().min(1).max(64).optional(),
  top: z.coerce.number().int().min(1).max(500).default(20),
});

/**
 * Spend: every model call the server priced, grouped by run, host, agent, model, day or month;
 * and each budget clause's use against its limit in its current window.
 */
export const spend = new Hono<OperatorEnv>()
  .use("/v1/spend", operatorAuth)
  .use("/v1/spend/budgets", operatorAuth)
  .get("/v1/spend", valid("query", Query), async (c) => {
    const q = c.req.valid("query");
    const rows = await spendTotals(db(c.env), { workspaceId: c.var.workspaceId, ...q }, q.group_by, q.limit);
    return c.json({ group_by: q.group_by, from: q.from ?? null, to: q.to ?? null, rows });
  })
  .get("/v1/spend/budgets", valid("query", BudgetsQuery), async (c) => {
    const q = c.req.valid("query");
    return c.json(await budgetUseOf(c.env, c.var.workspaceId, { onlyHost: q.host, onlyRun: q.run, top: q.top }));
  });
