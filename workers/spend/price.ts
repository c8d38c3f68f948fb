// The pricing rule lives in protocol/price.ts: the collector's gateway reserves budget with it too.
import { priceCall, type RecordedUsage } from "../../protocol/price.ts";
export { PRICE_TABLE_VERSION, priceCall, type RecordedUsage } from "../../protocol/price.ts";

/**
 * What the server prices one `llm_call` at: its vendor, model and usage with the bundled table, at
 * the server's time of receipt (null: unpriced). The chain prices each call so as it is appended;
 * the console shows each call's cost by the same rule.
 */
export function callPrice(payload: Record<string, unknown>, receivedMs: number): number | null {
  return priceCall(String(payload.vendor), String(payload.model), payload.usage as unknown as RecordedUsage, new Date(receivedMs));
}

/** The UTC day (`YYYY-MM-DD`) of a time. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
