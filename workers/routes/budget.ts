import { eq } from "drizzle-orm";
import { type Context, Hono } from "hono";
import { z } from "zod";
import { BudgetLeaseRequest, BudgetLeaseResize, ROUTES } from "../../protocol/index.ts";
import { authenticateHost, requireActive } from "../auth/host.ts";
import type { AppEnv } from "../body.ts";
import { db, schema } from "../db/client.ts";
import { notFound } from "../errors.ts";
import { loadPolicy, workspaceObject } from "../lib/policy-store.ts";
import { pushPolicies, pushWaitMs } from "../lib/push.ts";
import { check, jsonBody, valid } from "../validate.ts";
import type { LeaseAnswer } from "../workspace-object.ts";

const LeaseParam = z.object({ id: z.string().regex(/^lease_[0-9a-f]{32}$/) });
/**
 * The longest a lease answer waits for the recorders to apply the exhaustion it caused: the
 * gateway's call waits on this answer, and counts one slower than 5 s as the server unreachable.
 */
const LEASE_PUSH_WAIT_MS = 1000;
const leasePush = (env: Env, workspaceId: string) => pushPolicies(env, workspaceId, Math.min(pushWaitMs(env), LEASE_PUSH_WAIT_MS));

async function leaseAnswer(c: Context<AppEnv>, workspaceId: string, answer: LeaseAnswer, status: 200 | 201) {
  if (!answer.granted) {
    const { host: _h, ...scope } = answer.exhausted;
    return c.json({ error: "budget_exhausted", message: `The lease would pass the budget ${scope.budget}.`, exhausted: scope }, 409);
  }
  const { changed, ...lease } = answer;
  // A lease that reaches a limit exhausts the scope for everyone: the hosts hear of it at once.
  if (changed) await leasePush(c.env, workspaceId);
  return c.json(lease, status);
}

/**
 * Collector-facing: budget leases, for the gateway to reserve against before it forwards a call
 * (docs/api.md, "Budget leases"). A lease holds budget as spent for its run, its host and the
 * workspace until it is settled or expires; a lease that would take a scope past its limit is
 * refused (409 `budget_exhausted`, naming the scope). The calls' real cost arrives with their
 * `llm_call` frames, priced by the server.
 */
export const budget = new Hono<AppEnv>()
  .post(ROUTES.budgetLease, async (c) => {
    const host = await authenticateHost(c);
    requireActive(host);
    const req = check(BudgetLeaseRequest, jsonBody(c, "lease request"), "lease request");
    const owner = await db(c.env).select({ hostId: schema.runs.hostId }).from(schema.runs).where(eq(schema.runs.id, req.run)).get();
    if (owner && owner.hostId !== host.id) throw notFound("run");
    const { policy } = await loadPolicy(c.env, host.workspaceId);
    const answer = await workspaceObject(c.env, host.workspaceId).lease(
      { hostId: host.id, runId: req.run, microusd: req.microusd, ttlMs: req.ttl_ms },
      policy.budgets,
      Date.now(),
    );
    return leaseAnswer(c, host.workspaceId, answer, 201);
  })
  .patch("/v1/host/budget/leases/:id", valid("param", LeaseParam), async (c) => {
    const host = await authenticateHost(c);
    requireActive(host);
    const req = check(BudgetLeaseResize, jsonBody(c, "lease resize"), "lease resize");
    const { policy } = await loadPolicy(c.env, host.workspaceId);
    const answer = await workspaceObject(c.env, host.workspaceId).resize(
      { hostId: host.id, leaseId: c.req.valid("param").id, addMicrousd: req.add_microusd, ttlMs: req.ttl_ms },
      policy.budgets,
      Date.now(),
    );
    if (!answer.granted && "gone" in answer) throw notFound("lease");
    return leaseAnswer(c, host.workspaceId, answer, 200);
  })
  .delete("/v1/host/budget/leases/:id", valid("param", LeaseParam), async (c) => {
    const host = await authenticateHost(c);
    requireActive(host);
    const { policy } = await loadPolicy(c.env, host.workspaceId);
    const { changed } = await workspaceObject(c.env, host.workspaceId).settle(c.req.valid("param").id, policy.budgets, Date.now(), host.id);
    if (changed) await leasePush(c.env, host.workspaceId);
    return c.json({ settled: true });
  });
