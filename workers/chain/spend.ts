import type { ParsedPayload } from "../../protocol/index.ts";
import { PRICE_TABLE_VERSION, priceCall, type RecordedUsage, utcDay } from "../spend/price.ts";
import type { ChainState } from "./state.ts";
import type { SpendTotal } from "./types.ts";

/**
 * Prices one appended llm_call from the usage it holds, with the bundled price table, at the
 * server's time of receipt, and adds it to the total of that UTC day (the day every spend figure
 * is dated by: docs/api.md, "Spend"). Returns that total's key.
 */
export function priceAppendedCall(sql: SqlStorage, st: ChainState, payload: ParsedPayload, now: number): string {
  const vendor = String(payload.vendor);
  const model = String(payload.model);
  const usage = payload.usage as unknown as RecordedUsage;
  const micro = priceCall(vendor, model, usage, new Date(now));
  const day = utcDay(now);
  const version = micro === null ? "" : PRICE_TABLE_VERSION;
  if (micro !== null) st.spend += micro;
  sql.exec(
    `INSERT INTO spend (day, vendor, model, price_version, calls, unpriced_calls, microusd, input_tokens, output_tokens,
       cache_read_tokens, cache_write_tokens) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (day, vendor, model, price_version) DO UPDATE SET calls = calls + 1,
       unpriced_calls = unpriced_calls + excluded.unpriced_calls, microusd = microusd + excluded.microusd,
       input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
       cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens, cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens`,
    day,
    vendor,
    model,
    version,
    micro === null ? 1 : 0,
    micro ?? 0,
    usage.input_tokens,
    usage.output_tokens,
    usage.cache_read_tokens ?? 0,
    usage.cache_write_tokens ?? 0,
  );
  return JSON.stringify([day, vendor, model, version]);
}

/** The chain's spend totals: all of them (of the UTC days from `fromDay` on), or those of the given keys. */
export function spendTotals(sql: SqlStorage, keys?: Set<string>, fromDay = ""): SpendTotal[] {
  if (keys && keys.size === 0) return [];
  const rows = sql
    .exec<Record<string, SqlStorageValue>>("SELECT * FROM spend WHERE day >= ? ORDER BY day, vendor, model, price_version", fromDay)
    .toArray();
  return rows
    .filter((r) => !keys || keys.has(JSON.stringify([r.day, r.vendor, r.model, r.price_version])))
    .map((r) => ({
      day: String(r.day),
      vendor: String(r.vendor),
      model: String(r.model),
      priceVersion: String(r.price_version),
      calls: Number(r.calls),
      unpricedCalls: Number(r.unpriced_calls),
      microusd: Number(r.microusd),
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      cacheReadTokens: Number(r.cache_read_tokens),
      cacheWriteTokens: Number(r.cache_write_tokens),
    }));
}

/** The chain's whole priced spend of each UTC day the given totals are of. */
export function spendDays(sql: SqlStorage, totals: readonly SpendTotal[]): { day: string; microusd: number }[] {
  return [...new Set(totals.map((t) => t.day))].map((day) => ({
    day,
    microusd: sql.exec<{ n: number }>("SELECT sum(microusd) AS n FROM spend WHERE day = ?", day).one().n,
  }));
}

/** The chain's model calls the price table does not know. */
export function unpricedCalls(sql: SqlStorage): number {
  return sql.exec<{ n: number | null }>("SELECT sum(unpriced_calls) AS n FROM spend").one().n ?? 0;
}
