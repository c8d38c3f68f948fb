import { type Context, Hono } from "hono";
import { z } from "zod";
import { BudgetLeaseRequest, BudgetLeaseResize, hostChainId, ROUTES } from "../../protocol/index.ts";
import { authenticateHost, requireActive } from "../auth/host.ts";
import type { AppEnv } from "../body.ts";
import { AppError, notFound } from "../errors.ts";
import { loadPolicy, workspaceObject } from "../lib/policy-store.ts";
import { pushPolicies } from "../lib/push.ts";
import { check, jsonBody, valid } from "../validate.ts";
import type { LeaseAnswer } from "../workspace-object.ts";

const LeaseParam = z.object({ id: z.string().regex(/^lease_[0-9a-f]{32}$/) });

const usd = (microusd: number) => `$${(microusd / 1_000_000).toFixed(4)}`;

async function leaseAnswer(c: Context<AppEnv>, workspaceId: string, answer: LeaseAnswer, status: 200 | 201, asked: number) {
  if (!answer.granted) {
    const { host: _h, ...scope } = answer.exhausted;
    // Spent and reserved apart: the amount asked is in both counts, and in neither of the sentence's.
    const spent = scope.spent_microusd - (scope.reserved_microusd ?? 0);
    const reserved = Math.max(0, (scope.reserved_microusd ?? 0) - asked);
    const message = `The lease would pass the budget ${scope.budget} (${usd(scope.limit_microusd)}): ${usd(spent)} is spent, ${usd(reserved)} is reserved by calls in flight, ${usd(answer.room_microusd)} is left, and ${usd(asked)} was asked.`;
    return c.json({ error: "budget_exhausted", message, exhausted: scope, room_microusd: answer.room_microusd }, 409);
  }
  const { changed, ...lease } = answer;
  // A lease that reaches a limit exhausts the scope for everyone: the hosts hear of it at once.
  if (changed) await pushPolicies(c.env, workspaceId);
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
    if (req.run.startsWith("host_") && req.run !== hostChainId(host.id))
      throw new AppError(400, "invalid_request", "A lease for a computer's own chain names the asking computer's (host_<its id>).");
    // No run lookup: a lease counts toward the scopes of its own host (and workspace) only, so a run
    // id the host does not own, of its workspace or another, is answered as an unknown one (a run's
    // first call comes before its frames do): the same answer, and no D1 query on the call's path.
    const { policy } = await loadPolicy(c.env, host.workspaceId);
    const answer = await workspaceObject(c.env, host.workspaceId).lease(
      { hostId: host.id, runId: req.run, microusd: req.microusd, ttlMs: req.ttl_ms },
      policy.budgets,
      Date.now(),
    );
    return leaseAnswer(c, host.workspaceId, answer, 201, req.microusd);
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
    return leaseAnswer(c, host.workspaceId, answer, 200, req.add_microusd);
  })
  .delete("/v1/host/budget/leases/:id", valid("param", LeaseParam), async (c) => {
    const host = await authenticateHost(c);
    requireActive(host);
    const { policy } = await loadPolicy(c.env, host.workspaceId);
    const { changed } = await workspaceObject(c.env, host.workspaceId).settle(c.req.valid("param").id, policy.budgets, Date.now(), host.id);
    if (changed) await pushPolicies(c.env, host.workspaceId);
    return c.json({ settled: true });
  });
