// The pricing rule lives in protocol/price.ts: the collector's gateway reserves budget with it too.
export { PRICE_TABLE_VERSION, priceCall, type RecordedUsage } from "../../protocol/price.ts";

/** The UTC day (`YYYY-MM-DD`) of a time. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
