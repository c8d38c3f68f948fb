import { Hono } from "hono";
import { z } from "zod";
import { operatorAuth, type OperatorEnv } from "../auth/operator.ts";
import { db } from "../db/client.ts";
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

/** Spend: every model call the server priced, grouped by run, host, agent, model, day or month. */
export const spend = new Hono<OperatorEnv>().use("/v1/spend", operatorAuth).get("/v1/spend", valid("query", Query), async (c) => {
  const q = c.req.valid("query");
  const rows = await spendTotals(db(c.env), { workspaceId: c.var.workspaceId, ...q }, q.group_by, q.limit);
  return c.json({ group_by: q.group_by, from: q.from ?? null, to: q.to ?? null, rows });
});
