import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type BudgetClause, defaultPolicy, openPolicy, publicKeyOf, ROUTES } from "../../protocol/index.ts";
import { SERVER_SECRET } from "../support/sample-run.ts";
import { workspaceObject } from "../../workers/lib/policy-store.ts";
import { BASE, enrollHost, hostCall, ingest, op, seedWorkspace, TestRun, type TestHost, hostPolicyOf, openPush } from "./support.ts";

const policyInput = (budgets: BudgetClause[], mode: "enforce" | "observe" = "enforce") => ({
  mode,
  tools: [],
  default_tool_decision: "none",
  models: null,
  budgets,
  retention: { mode: "keep", keep: ["prompt"] },
});

async function setBudgets(token: string, workspaceId: string, budgets: BudgetClause[]) {
  const res = await op(token, `/v1/workspaces/${workspaceId}/policy`, { method: "PUT", json: policyInput(budgets) });
  expect(res.status).toBe(200);
}

const policyOf = hostPolicyOf;

/** A workspace's policy with these budget clauses, as its object is handed it. */
const withClauses = (budgets: BudgetClause[]) => ({ ...defaultPolicy("ws", Date.now()), budgets });

/** A scope's use without its reserved part (the lease tests check that; these check the totals). */
const spentOnly = (uses: { reserved_microusd?: number }[]) => uses.map(({ reserved_microusd: _r, ...u }) => u);

/** A host's push connection, counting pushes (a test waits for a count, never for a time). */
async function listen(h: TestHost) {
  const conn = await openPush(h);
  return { seen: conn.messages, ws: conn.ws!, until: conn.received };
}

describe("budgets", () => {
  it("lists a workspace's day budget as exhausted once spend reaches it, pushes that to connected hosts, and lifts it when raised", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    await setBudgets(token, workspaceId, [{ id: "daily", scope: "workspace", window: "day", limit_microusd: 9000 }]);
    const push = await listen(host);
    const run = new TestRun(host);
    run.start();
    run.llm();
    await ingest(host, [run.part()]);
    expect((await policyOf(host)).exhausted_budgets ?? []).toEqual([]);
    run.llm();
    await ingest(host, [run.part()]);
    await push.until(1);
    const policy = await policyOf(host);
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    expect(policy.exhausted_budgets).toEqual([
      { budget: "daily", scope: "workspace", window: "day", until_ms: midnight.getTime(), spent_microusd: 9000, limit_microusd: 9000 },
    ]);
    // One announcement to the workspace, carrying each host its own signed policy: the one it fetches.
    expect(push.seen[0]).toEqual({
      type: "policy",
      etag: expect.any(String),
      change: expect.stringMatching(/^chg_[0-9a-f]{32}$/),
      policy: expect.anything(),
    });
    expect(openPolicy(push.seen[0]!.policy!, publicKeyOf(SERVER_SECRET))).toEqual(policy);
    await setBudgets(token, workspaceId, [{ id: "daily", scope: "workspace", window: "day", limit_microusd: 20_000 }]);
    await push.until(2);
    expect((await policyOf(host)).exhausted_budgets ?? []).toEqual([]);
    push.ws.close();
  });

  it("limits each run on its own: an exhausted run is listed by id, only in its own host's policy", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const [a, b] = [await enrollHost(token), await enrollHost(token)];
    await setBudgets(token, workspaceId, [{ id: "per-run", scope: "run", window: "run", limit_microusd: 4500 }]);
    const [pa, pb] = [await listen(a), await listen(b)];
    const big = new TestRun(a);
    big.llm();
    const small = new TestRun(a);
    small.llm({ usage: { input_tokens: 10, output_tokens: 1 } });
    await ingest(a, [big.part(), small.part()]);
    expect((await policyOf(a)).exhausted_budgets).toEqual([expect.objectContaining({ budget: "per-run", run: big.chain, until_ms: null })]);
    expect((await policyOf(b)).exhausted_budgets ?? []).toEqual([]);
    // The announcement carries each host its own: the run's exhaustion only to its host.
    const [[toA], [toB]] = [await pa.until(1), await pb.until(1)];
    expect(openPolicy(toA!.policy!, publicKeyOf(SERVER_SECRET))).toEqual(await policyOf(a));
    expect(openPolicy(toB!.policy!, publicKeyOf(SERVER_SECRET))).toEqual(await policyOf(b));
    pa.ws.close();
    pb.ws.close();
  });

  it("counts each host on its own under a host budget", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const [a, b] = [await enrollHost(token), await enrollHost(token)];
    await setBudgets(token, workspaceId, [{ id: "box", scope: "host", window: "month", limit_microusd: 4500 }]);
    const run = new TestRun(a);
    run.llm();
    await ingest(a, [run.part()]);
    expect((await policyOf(a)).exhausted_budgets).toEqual([expect.objectContaining({ budget: "box", scope: "host", window: "month" })]);
    expect((await policyOf(b)).exhausted_budgets ?? []).toEqual([]);
  });

  it("leases budget to a recorder with one writer: a lease that would pass a limit is refused until another is settled", async () => {
    const { workspaceId } = await seedWorkspace();
    const hub = workspaceObject(env, workspaceId);
    const clauses: BudgetClause[] = [{ id: "per-run", scope: "run", window: "run", limit_microusd: 9000 }];
    await hub.setPolicy(withClauses(clauses));
    const req = { hostId: "host_x", runId: `run_${"1".repeat(32)}`, microusd: 5000, ttlMs: 60_000 };
    const now = Date.now();
    const [first, second] = await Promise.all([hub.lease(req, now), hub.lease(req, now)]);
    const granted = [first, second].filter((l) => l.granted);
    expect(granted).toHaveLength(1);
    const refused = [first, second].find((l) => !l.granted);
    expect(refused).toMatchObject({ granted: false, exhausted: { budget: "per-run", run: req.runId, spent_microusd: 10_000 } });
    await hub.settle((granted[0] as { lease_id: string }).lease_id, now);
    expect(await hub.lease(req, now)).toMatchObject({ granted: true, microusd: 5000 });
    // An expired lease no longer holds budget back.
    expect(await hub.lease(req, now + 120_000)).toMatchObject({ granted: true });
  });

  it("refuses a bad budget clause with 400 naming the field, and keeps the policy as it was", async () => {
    const { token, workspaceId } = await seedWorkspace();
    await setBudgets(token, workspaceId, [{ id: "ok", scope: "workspace", window: "month", limit_microusd: 1 }]);
    const bad: unknown[] = [
      [{ id: "neg", scope: "workspace", window: "day", limit_microusd: -1 }],
      [{ id: "scope", scope: "planet", window: "day", limit_microusd: 1 }],
      [{ id: "window", scope: "run", window: "week", limit_microusd: 1 }],
      [
        { id: "twice", scope: "run", window: "run", limit_microusd: 1 },
        { id: "twice", scope: "host", window: "day", limit_microusd: 1 },
      ],
    ];
    for (const budgets of bad) {
      const res = await op(token, `/v1/workspaces/${workspaceId}/policy`, { method: "PUT", json: { ...policyInput([]), budgets } });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { issues: { fieldErrors: Record<string, unknown> } };
      expect(Object.keys(body.issues.fieldErrors)).toContain("budgets");
    }
    const now = (await (await op(token, `/v1/workspaces/${workspaceId}/policy`)).json()) as { policy: { budgets: BudgetClause[] } };
    expect(now.policy.budgets).toEqual([{ id: "ok", scope: "workspace", window: "month", limit_microusd: 1 }]);
  });
});

describe("budget leases over the host-signed route", () => {
  it("grants a lease, refuses one past the limit with 409 naming the scope, frees budget on settle, and refuses bad input", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    await setBudgets(token, workspaceId, [{ id: "per-run", scope: "run", window: "run", limit_microusd: 9000 }]);
    const run = `run_${"2".repeat(32)}`;
    const lease = (json: unknown) => hostCall(host, "POST", ROUTES.budgetLease, JSON.stringify(json));
    const first = await lease({ run, microusd: 9000 });
    expect(first.status).toBe(201);
    const granted = (await first.json()) as { lease_id: string; microusd: number; expires_ms: number };
    expect(granted).toMatchObject({ granted: true, microusd: 9000 });
    // The lease reached the limit: the run is listed as exhausted until the lease is settled.
    expect((await policyOf(host)).exhausted_budgets).toEqual([expect.objectContaining({ run, budget: "per-run" })]);
    const refused = await lease({ run, microusd: 1 });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: "budget_exhausted", exhausted: { budget: "per-run", run } });
    expect((await hostCall(host, "DELETE", ROUTES.budgetSettle(granted.lease_id))).status).toBe(200);
    expect((await policyOf(host)).exhausted_budgets ?? []).toEqual([]);
    expect((await lease({ run, microusd: 1 })).status).toBe(201);
    for (const bad of [{ run, microusd: -5 }, { run: "run_nope", microusd: 5 }, { run, microusd: 5, ttl_ms: 1 }, { run }]) {
      const res = await lease(bad);
      expect(res.status).toBe(400);
    }
  });

  it("answers a lease for another workspace's run as one for an unknown run id: granted, on the asking host's own scopes; grants carry the room left, refusals spent and reserved apart", async () => {
    const theirs = await seedWorkspace();
    const stranger = await enrollHost(theirs.token);
    const foreign = new TestRun(stranger);
    foreign.start();
    await ingest(stranger, [foreign.part()]);
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    await setBudgets(token, workspaceId, [{ id: "daily", scope: "workspace", window: "day", limit_microusd: 10_000 }]);
    const lease = (run: string, microusd: number) => hostCall(host, "POST", ROUTES.budgetLease, JSON.stringify({ run, microusd }));
    const a = await lease(foreign.chain, 3000);
    const b = await lease(`run_${"7".repeat(32)}`, 3000);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(await a.json()).toMatchObject({ granted: true, microusd: 3000, room_microusd: 7000 });
    expect(await b.json()).toMatchObject({ granted: true, microusd: 3000, room_microusd: 4000 });
    // The other workspace's budget is untouched: the lease counts where the asking host does.
    const theirHub = workspaceObject(env, theirs.workspaceId);
    await theirHub.setPolicy(withClauses([{ id: "d", scope: "workspace", window: "day", limit_microusd: 1 }]));
    expect((await theirHub.use(Date.now()))[0]!.uses[0]!.spent_microusd).toBe(0);
    const refused = await lease(`run_${"8".repeat(32)}`, 5000);
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({
      error: "budget_exhausted",
      message:
        "The lease would pass the budget daily ($0.01): $0.00 is spent, $0.0060 is reserved by calls in flight, $0.0040 is left, and $0.0050 was asked.",
      exhausted: { budget: "daily", spent_microusd: 11_000, reserved_microusd: 11_000, limit_microusd: 10_000 },
      room_microusd: 4000,
    });
  });

  it("leases for the asking computer's own chain (the gateway's calls tied to no session), never for another's", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const [host, other] = [await enrollHost(token), await enrollHost(token)];
    await setBudgets(token, workspaceId, [{ id: "daily", scope: "workspace", window: "day", limit_microusd: 10_000 }]);
    const lease = (run: string) => hostCall(host, "POST", ROUTES.budgetLease, JSON.stringify({ run, microusd: 1000 }));
    expect((await lease(`host_${host.id}`)).status).toBe(201);
    const theirs = await lease(`host_${other.id}`);
    expect(theirs.status).toBe(400);
    expect(await theirs.json()).toMatchObject({ error: "invalid_request" });
  });

  it("resizes a lease: grows within the limit, refuses growth past it leaving the lease as it was, shrinks, and answers 404 for another host's", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const [host, other] = [await enrollHost(token), await enrollHost(token)];
    await setBudgets(token, workspaceId, [{ id: "daily", scope: "workspace", window: "day", limit_microusd: 10_000 }]);
    const run = `run_${"3".repeat(32)}`;
    const first = (await (await hostCall(host, "POST", ROUTES.budgetLease, JSON.stringify({ run, microusd: 4000 }))).json()) as {
      lease_id: string;
    };
    const resize = (h: TestHost, json: unknown) => hostCall(h, "PATCH", ROUTES.budgetSettle(first.lease_id), JSON.stringify(json));
    const grown = await resize(host, { add_microusd: 5000, ttl_ms: 60_000 });
    expect(grown.status).toBe(200);
    expect(await grown.json()).toMatchObject({ granted: true, lease_id: first.lease_id, microusd: 9000 });
    const past = await resize(host, { add_microusd: 1001 });
    expect(past.status).toBe(409);
    expect(await past.json()).toMatchObject({ error: "budget_exhausted", exhausted: { budget: "daily", spent_microusd: 10_001 } });
    expect(await (await resize(host, { add_microusd: 0 })).json()).toMatchObject({ microusd: 9000 });
    expect(await (await resize(host, { add_microusd: -20_000 })).json()).toMatchObject({ microusd: 0 });
    expect((await resize(other, { add_microusd: 1 })).status).toBe(404);
    expect(
      (await hostCall(host, "PATCH", ROUTES.budgetSettle(`lease_${"0".repeat(32)}`), JSON.stringify({ add_microusd: 1 }))).status,
    ).toBe(404);
    expect((await resize(host, { add_microusd: 1.5 })).status).toBe(400);
  });

  it("a lease renewed past UTC midnight counts in the new day's window: its own growth and other runs' leases are checked with it", async () => {
    const { workspaceId } = await seedWorkspace();
    const hub = workspaceObject(env, workspaceId);
    const clauses: BudgetClause[] = [{ id: "ws-day", scope: "workspace", window: "day", limit_microusd: 10_000 }];
    await hub.setPolicy(withClauses(clauses));
    const run = (n: number) => `run_${String(n).repeat(32)}`;
    const before = Date.UTC(2026, 0, 15, 23, 58);
    const after = Date.UTC(2026, 0, 16, 0, 2);
    const first = await hub.lease({ hostId: "host_a", runId: run(1), microusd: 5000, ttlMs: 600_000 }, before);
    expect(first).toMatchObject({ granted: true });
    const id = (first as { lease_id: string }).lease_id;
    expect(await hub.resize({ hostId: "host_a", leaseId: id, addMicrousd: 0, ttlMs: 600_000 }, after)).toMatchObject({
      granted: true,
    });
    expect((await hub.use(after))[0]?.uses).toEqual([{ host: null, spent_microusd: 5000, reserved_microusd: 5000 }]);
    expect(await hub.resize({ hostId: "host_a", leaseId: id, addMicrousd: 5001, ttlMs: 600_000 }, after)).toMatchObject({
      granted: false,
      exhausted: { budget: "ws-day", spent_microusd: 10_001 },
    });
    expect(await hub.lease({ hostId: "host_b", runId: run(2), microusd: 5001, ttlMs: 600_000 }, after)).toMatchObject({
      granted: false,
    });
    expect(await hub.lease({ hostId: "host_b", runId: run(2), microusd: 5000, ttlMs: 600_000 }, after)).toMatchObject({
      granted: true,
    });
  });

  it("takes a run's newly priced spend off the run's leases, so a call reserved under a lease is counted once", async () => {
    const { token, workspaceId } = await seedWorkspace();
    const host = await enrollHost(token);
    await setBudgets(token, workspaceId, [{ id: "daily", scope: "workspace", window: "day", limit_microusd: 20_000 }]);
    const run = new TestRun(host);
    run.start();
    const lease = (await (await hostCall(host, "POST", ROUTES.budgetLease, JSON.stringify({ run: run.chain, microusd: 6000 }))).json()) as {
      lease_id: string;
    };
    const held = async () =>
      (
        (await (await hostCall(host, "PATCH", ROUTES.budgetSettle(lease.lease_id), JSON.stringify({ add_microusd: 0 }))).json()) as {
          microusd: number;
        }
      ).microusd;
    // The call the lease reserved for arrives priced (4500): the lease keeps only the rest.
    run.llm();
    await ingest(host, [run.part()]);
    expect(await held()).toBe(1500);
    // The same totals again (a resent batch) take nothing more; a second call empties the lease, never below 0.
    await ingest(host, [run.part()]);
    expect(await held()).toBe(1500);
    run.llm();
    await ingest(host, [run.part()]);
    expect(await held()).toBe(0);
    // Spend 9000 + leases 0: a lease of the remaining 11 000 fits exactly, one more micro-dollar does not.
    expect((await hostCall(host, "POST", ROUTES.budgetLease, JSON.stringify({ run: run.chain, microusd: 11_001 }))).status).toBe(409);
    expect((await hostCall(host, "POST", ROUTES.budgetLease, JSON.stringify({ run: run.chain, microusd: 11_000 }))).status).toBe(201);
  });
});

describe("each budget clause's use", () => {
  const clauses: BudgetClause[] = [
    { id: "ws-day", scope: "workspace", window: "day", limit_microusd: 10_000 },
    { id: "box", scope: "host", window: "month", limit_microusd: 6000 },
    { id: "per-run", scope: "run", window: "run", limit_microusd: 5000 },
  ];
  const r = (n: number) => `run_${String(n).repeat(32)}`;
  const now = Date.UTC(2026, 0, 15, 12);

  async function counters() {
    const { workspaceId } = await seedWorkspace();
    const hub = workspaceObject(env, workspaceId);
    await hub.setPolicy(withClauses(clauses));
    await hub.report(
      [
        { runId: r(1), hostId: "host_a", day: "2026-01-15", microusd: 6000 },
        { runId: r(2), hostId: "host_a", day: "2026-01-15", microusd: 1000 },
        { runId: r(3), hostId: "host_b", day: "2026-01-15", microusd: 2000 },
        { runId: r(4), hostId: "host_b", day: "2026-01-14", microusd: 3000 },
        { runId: r(5), hostId: "host_b", day: "2025-12-31", microusd: 500 },
      ],
      now,
    );
    expect(await hub.lease({ hostId: "host_b", runId: r(3), microusd: 1000, ttlMs: 60_000 }, now)).toMatchObject({
      granted: true,
    });
    return hub;
  }

  it("answers per scope instance, in the clause's window, priced plus leased, by the rule that decides what is exhausted", async () => {
    const hub = await counters();
    const use = (await hub.use(now, { top: 2 })).map((c) => ({ ...c, uses: spentOnly(c.uses) }));
    expect(use).toEqual([
      {
        budget: "ws-day",
        scope: "workspace",
        window: "day",
        limit_microusd: 10_000,
        until_ms: Date.UTC(2026, 0, 16),
        uses: [{ host: null, spent_microusd: 10_000 }],
        more: 0,
      },
      {
        budget: "box",
        scope: "host",
        window: "month",
        limit_microusd: 6000,
        until_ms: Date.UTC(2026, 1, 1),
        // host_b's December run is outside this month's window; its lease is inside.
        uses: [
          { host: "host_a", spent_microusd: 7000 },
          { host: "host_b", spent_microusd: 6000 },
        ],
        more: 0,
      },
      {
        budget: "per-run",
        scope: "run",
        window: "run",
        limit_microusd: 5000,
        until_ms: null,
        // The top two by spend (a tie ordered by id); three more runs left out.
        uses: [
          { host: "host_a", run: r(1), spent_microusd: 6000 },
          { host: "host_b", run: r(3), spent_microusd: 3000 },
        ],
        more: 3,
      },
    ]);
    // What reached its limit here is exactly what the hosts' policies list as exhausted.
    const exhausted = (await hub.exhausted("host_a", now)).scopes.map((s) => [s.budget, s.host, s.run ?? null]);
    expect(exhausted).toEqual([
      ["ws-day", null, null],
      ["box", "host_a", null],
      ["per-run", "host_a", r(1)],
    ]);
    // Once the lease expires it no longer counts.
    const later = await hub.use(now + 120_000, { top: 2 });
    expect(spentOnly(later[0]!.uses)).toEqual([{ host: null, spent_microusd: 9000 }]);
    expect(spentOnly(later[2]!.uses)[1]).toEqual({ host: "host_b", run: r(4), spent_microusd: 3000 });
  });

  it("narrows to one run's scopes, and answers 0 for a host with no spend", async () => {
    const hub = await counters();
    const one = await hub.use(now, { onlyHost: "host_b", onlyRun: r(3) });
    expect(one.map((c) => spentOnly(c.uses))).toEqual([
      [{ host: null, spent_microusd: 10_000 }],
      [{ host: "host_b", spent_microusd: 6000 }],
      [{ host: "host_b", run: r(3), spent_microusd: 3000 }],
    ]);
    const idle = await hub.use(now, { onlyHost: "host_idle" });
    expect(idle.map((c) => spentOnly(c.uses))).toEqual([
      [{ host: null, spent_microusd: 10_000 }],
      [{ host: "host_idle", spent_microusd: 0 }],
      [],
    ]);
  });

  it("GET /v1/spend/budgets answers the same for an operator, validated", async () => {
    const { token, workspaceId } = await seedWorkspace();
    expect(await (await op(token, "/v1/spend/budgets")).json()).toMatchObject({ clauses: [] });
    const host = await enrollHost(token);
    await setBudgets(token, workspaceId, [
      { id: "daily", scope: "workspace", window: "day", limit_microusd: 9000 },
      { id: "per-run", scope: "run", window: "run", limit_microusd: 4500 },
    ]);
    const run = new TestRun(host);
    run.start();
    run.llm();
    await ingest(host, [run.part()]);
    const res = await op(token, "/v1/spend/budgets?top=5");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { now_ms: number; clauses: { budget: string; uses: unknown[] }[] };
    expect(body.clauses.map((c) => [c.budget, c.uses])).toEqual([
      ["daily", [{ host: null, spent_microusd: 4500, reserved_microusd: 0 }]],
      ["per-run", [{ host: host.id, run: run.chain, spent_microusd: 4500, reserved_microusd: 0 }]],
    ]);
    expect(await (await op(token, `/v1/spend/budgets?run=${run.chain}`)).json()).toMatchObject({
      clauses: [{ budget: "daily" }, { budget: "per-run", uses: [{ run: run.chain }] }],
    });
    for (const q of ["?top=0", "?top=x", "?colour=red", "?top=501"]) {
      const bad = await op(token, `/v1/spend/budgets${q}`);
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ error: "invalid_request" });
    }
    const anon = await exports.default.fetch(`${BASE}/v1/spend/budgets`);
    expect(anon.status).toBe(401);
  });
});
