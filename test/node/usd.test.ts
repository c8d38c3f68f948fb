import { describe, expect, it } from "vitest";
import { budgetReason, formatUsd } from "../../protocol/index.ts";

describe("formatUsd", () => {
  it("formats millionths from the integer, rounding half up where a float's toFixed would not", () => {
    // (4750 / 1e6).toFixed(4) is "0.0047": 0.00475 has no exact binary form and sits just below.
    expect(formatUsd(4750)).toBe("$0.0048");
    expect(formatUsd(4749)).toBe("$0.0047");
    expect(formatUsd(1)).toBe("$0.0000");
    expect(formatUsd(50)).toBe("$0.0001");
    expect(formatUsd(0)).toBe("$0.00");
    expect(formatUsd(10_000)).toBe("$0.01");
    expect(formatUsd(1_005_000)).toBe("$1.01");
    expect(formatUsd(1_750_000)).toBe("$1.75");
    expect(formatUsd(1_234_565_000)).toBe("$1,234.57");
    expect(formatUsd(9_007_199_254_740_991)).toBe("$9,007,199,254.74");
    expect(formatUsd(-2_500_000)).toBe("-$2.50");
  });

  it("is the formatter the budget refusal's sentence uses", () => {
    const b = { budget: "daily", scope: "workspace", window: "day", until_ms: null, spent_microusd: 4750, limit_microusd: 4500 } as const;
    expect(budgetReason(b)).toBe("budget exhausted: daily allows $0.0045 for the workspace in today (UTC), and $0.0048 is spent");
    // What leases hold for calls in flight is said apart from what was spent.
    expect(budgetReason({ ...b, reserved_microusd: 1000 })).toBe(
      "budget exhausted: daily allows $0.0045 for the workspace in today (UTC), and $0.0038 is spent and $0.0010 is reserved by calls in flight",
    );
  });
});
