import { type Context, Hono } from "hono";
import { z } from "zod";
import { BudgetLeaseRequest, BudgetLeaseResize, formatUsd, hostChainId, ROUTES } from "../../protocol/index.ts";
import { type HostEnv, hostAuth } from "../auth/host.ts";
import { AppError, notFound } from "../errors.ts";
import { loadPolicy, workspaceObject } from "../lib/policy-store.ts";
import { pushPolicies, pushWaitMs } from "../lib/push.ts";
import { valid } from "../validate.ts";
import type { ExhaustedScope } from "../workspace/budgets.ts";
import type { ResizeAnswer } from "../workspace-object.ts";

const LeaseParam = z.object({ id: z.string().regex(/^lease_[0-9a-f]{32}$/) });
/**
 * The longest a lease answer waits for the recorders to apply the exhaustion it caused: the
 * gateway's call waits on this answer, and counts one slower than 5 s as the server unreachable.
 */
const LEASE_PUSH_WAIT_MS = 1000;
const leasePush = (env: Env, workspaceId: string) => pushPolicies(env, workspaceId, Math.min(pushWaitMs(env), LEASE_PUSH_WAIT_MS));

/** A lease past a scope's limit: 409 `budget_exhausted`, naming the scope and the room left (spent and reserved apart). */
class BudgetExhausted extends AppError {
  constructor(exhausted: Omit<ExhaustedScope, "host">, room: number, asked: number) {
    // Spent and reserved apart: the amount asked is in both counts, and in neither of the sentence's.
    const spent = exhausted.spent_microusd - (exhausted.reserved_microusd ?? 0);
    const reserved = Math.max(0, (exhausted.reserved_microusd ?? 0) - asked);
    super(
      409,
      "budget_exhausted",
      `The lease would pass the budget ${exhausted.budget} (${formatUsd(exhausted.limit_microusd)}): ${formatUsd(spent)} is spent, ${formatUsd(reserved)} is reserved by calls in flight, ${formatUsd(room)} is left, and ${formatUsd(asked)} was asked.`,
      { fields: { exhausted, room_microusd: room } },
    );
  }
}

async function leaseAnswer(c: Context<HostEnv>, workspaceId: string, answer: ResizeAnswer, status: 200 | 201, asked: number) {
  if (!answer.granted) {
    if ("gone" in answer) throw notFound("lease");
    const { host: _h, ...scope } = answer.exhausted;
    throw new BudgetExhausted(scope, answer.room_microusd, asked);
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
export const budget = new Hono<HostEnv>()
  .post(ROUTES.budgetLease, hostAuth(), valid("json", BudgetLeaseRequest, { what: "lease request", empty: "refused" }), async (c) => {
    const host = c.var.host;
    const req = c.req.valid("json");
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
  .patch(
    ROUTES.budgetSettle.pattern,
    hostAuth(),
    valid("param", LeaseParam),
    valid("json", BudgetLeaseResize, { what: "lease resize", empty: "refused" }),
    async (c) => {
      const host = c.var.host;
      const req = c.req.valid("json");
      const { policy } = await loadPolicy(c.env, host.workspaceId);
      const answer = await workspaceObject(c.env, host.workspaceId).resize(
        { hostId: host.id, leaseId: c.req.valid("param").id, addMicrousd: req.add_microusd, ttlMs: req.ttl_ms },
        policy.budgets,
        Date.now(),
      );
      return leaseAnswer(c, host.workspaceId, answer, 200, req.add_microusd);
    },
  )
  .delete(ROUTES.budgetSettle.pattern, hostAuth(), valid("param", LeaseParam), async (c) => {
    const host = c.var.host;
    const { policy } = await loadPolicy(c.env, host.workspaceId);
    const { changed } = await workspaceObject(c.env, host.workspaceId).settle(c.req.valid("param").id, policy.budgets, Date.now(), host.id);
    if (changed) await leasePush(c.env, host.workspaceId);
    return c.json({ settled: true });
  });
