// priceCall keeps the model a vendor and model id resolve to: it must price exactly as asking the
// whole table does, for every model the table has for the gateway's vendors, dated ids included.
import { calcPrice, findProvider } from "@pydantic/genai-prices";
import { describe, expect, it } from "vitest";
import { priceCall, type RecordedUsage } from "../../protocol/price.ts";

function wholeTable(vendor: string, model: string, u: RecordedUsage, at: Date): number | null {
  const cacheRead = u.cache_read_tokens ?? 0;
  const cacheWrite = u.cache_write_tokens ?? 0;
  try {
    const r = calcPrice(
      {
        input_tokens: u.input_tokens + cacheRead + cacheWrite,
        cache_read_tokens: cacheRead,
        cache_write_tokens: cacheWrite,
        output_tokens: u.output_tokens,
      },
      model,
      { providerId: vendor, timestamp: at },
    );
    return r && Number.isFinite(r.total_price) && r.total_price >= 0 ? Math.round(r.total_price * 1_000_000) : null;
  } catch {
    return null;
  }
}

describe("priceCall", () => {
  it("prices every model of the gateway's vendors as the whole table does, asked again and again", () => {
    const usages: RecordedUsage[] = [
      { input_tokens: 30, output_tokens: 85 },
      { input_tokens: 1200, output_tokens: 4000, cache_read_tokens: 250_000, cache_write_tokens: 9000 },
      { input_tokens: 0, output_tokens: 0 },
    ];
    const dates = [new Date("2024-03-01T03:00:00Z"), new Date("2026-12-01T22:30:00Z")];
    let priced = 0;
    for (const vendor of ["anthropic", "openai"]) {
      const ids = findProvider({ providerId: vendor })!.models.flatMap((m) => [m.id, `${m.id}-20250514`, m.id.toUpperCase()]);
      for (const id of [...ids, "no-such-model"])
        for (let round = 0; round < 2; round++)
          for (const u of usages)
            for (const at of dates) {
              const p = priceCall(vendor, id, u, at);
              expect(p, `${vendor} ${id}`).toBe(wholeTable(vendor, id, u, at));
              if (p !== null) priced++;
            }
    }
    expect(priced).toBeGreaterThan(100);
    expect(priceCall("no-such-vendor", "claude-sonnet-4-5", usages[0]!, dates[0]!)).toBeNull();
  });
});
