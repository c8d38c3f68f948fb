import { calcPrice, findProvider, type Provider } from "@pydantic/genai-prices";

/**
 * The price table every call is priced with: the bundled data of `@pydantic/genai-prices`, never
 * fetched at run time, so a call is priced the same way every time, by the server (spend) and by
 * the collector's gateway (its budget reservations). Recorded with each priced call; bump it with
 * the package (test/workers/spend.test.ts checks they agree).
 *
 * Not re-exported by `protocol/index.ts`: only the sides that price import this module, so the
 * table stays out of bundles that never price (the hook, the verifier).
 */
export const PRICE_TABLE_VERSION = "genai-prices@0.1.8";

/** The usage an `llm_call` frame holds: the record's convention, where `input_tokens` is the uncached input only. */
export interface RecordedUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens?: number;
  cache_write_tokens?: number;
}

// Finding a model in the table is most of a price's cost (each model's match rules are tried in
// turn, about 50 µs): the model a vendor and model id resolve to is kept, and the table is then
// asked with a provider holding only that model, which finds the same model and the same prices.
const resolved = new Map<string, Provider | null>();

function providerFor(vendor: string, model: string, at: Date): Provider | null {
  const key = `${vendor}\u0000${model}`;
  let p = resolved.get(key);
  if (p === undefined) {
    const provider = findProvider({ providerId: vendor });
    let found: ReturnType<typeof calcPrice> = null;
    try {
      found = provider ? calcPrice({ input_tokens: 0, output_tokens: 0 }, model, { providerId: vendor, timestamp: at }) : null;
    } catch {
      found = null;
    }
    // Unknown (or not priceable) here: asked of the whole table each time, as before.
    if (!provider || !found) return provider ?? null;
    p = { ...provider, models: [found.model] };
    if (resolved.size >= 256) resolved.clear();
    resolved.set(key, p);
  }
  return p;
}

/** A call's price in millionths of a dollar, or null when the table does not know its vendor or model. */
export function priceCall(vendor: string, model: string, usage: RecordedUsage, at: Date): number | null {
  const provider = providerFor(vendor, model, at);
  if (!provider) return null;
  const cacheRead = usage.cache_read_tokens ?? 0;
  const cacheWrite = usage.cache_write_tokens ?? 0;
  let result: ReturnType<typeof calcPrice>;
  try {
    result = calcPrice(
      // genai-prices counts cached input inside input_tokens; the record keeps it apart.
      {
        input_tokens: usage.input_tokens + cacheRead + cacheWrite,
        cache_read_tokens: cacheRead,
        cache_write_tokens: cacheWrite,
        output_tokens: usage.output_tokens,
      },
      model,
      { provider, timestamp: at },
    );
  } catch {
    // The table refuses usage it cannot price (a figure it finds inconsistent): unpriced, not $0.
    return null;
  }
  if (!result || !Number.isFinite(result.total_price) || result.total_price < 0) return null;
  return Math.round(result.total_price * 1_000_000);
}
