// The enforcement tier's sentence says what the record shows: a count in words people read, and
// never "no model call passed the gateway" beside a gateway call that is only not locked yet.
import { describe, expect, it } from "vitest";
import { emptyCoverage, enforcementTier } from "../../protocol/index.ts";

const facts = (over: Partial<ReturnType<typeof emptyCoverage>>) => ({ ...emptyCoverage(), ...over });
const tier = (over: Partial<ReturnType<typeof emptyCoverage>>, gatewayLocked = true) =>
  enforcementTier({ facts: facts(over), gaps: [], environment: "customer_computer", mode: "enforce", gatewayLocked });

describe("the enforcement tier's reason", () => {
  it("counts hook decisions in words: once, then n times", () => {
    expect(tier({ enforced_hook_decisions: 1 })).toEqual({
      value: "harness",
      reason: "the harness's hooks asked Oxagen once and no model call passed the gateway",
    });
    expect(tier({ enforced_hook_decisions: 3 }).reason).toBe(
      "the harness's hooks asked Oxagen 3 times and no model call passed the gateway",
    );
  });

  it("does not say no model call passed the gateway when one did and is only not locked yet", () => {
    const t = tier({ enforced_hook_decisions: 2, llm_calls_gateway: 1 }, false);
    expect(t.value).toBe("harness");
    expect(t.reason).toBe("the harness's hooks asked Oxagen 2 times; the gateway's model calls are not yet under a lock of the computer");
    expect(tier({ llm_calls_gateway: 1 }).reason).toBe("the gateway carried 1 of the run's model calls");
  });
});
