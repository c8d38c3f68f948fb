import { priceCall, type RecordedUsage } from "../../../protocol/price.ts";
import { Remembered } from "../../lib/remembered.ts";
import type { Api, ModelRequest, Vendor } from "./apis.ts";

/**
 * The output a call is assumed to produce when its request sets no cap. Anthropic requires
 * `max_tokens`, so its default is only for a malformed request; OpenAI's Responses and Chat
 * Completions do not, and Codex sends none: 16 384 tokens is above what a coding agent's turn
 * usually writes, not the model's ceiling (128K for gpt-5), so an uncapped call that writes more
 * is the estimate's error (docs/collector.md, "Budget reservations").
 */
export const DEFAULT_OUTPUT_TOKENS: Record<Vendor, number> = { anthropic: 4096, openai: 16_384 };

/** Rounds up to four significant binary digits (at most 12.5% more): a call's bucket of the price cache. */
export function roundUp(n: number): number {
  if (n <= 16) return n;
  const step = 2 ** (Math.floor(Math.log2(n)) - 3);
  return Math.ceil(n / step) * step;
}

// Pricing one call from the table takes about 80 µs (its model lookup): too slow for the hot path,
// so maximum costs are kept per (day, vendor, model, rounded input and output). Rounding up keeps
// the estimate an upper bound: a price only grows with tokens.
const cache = new Remembered<number | null>(4096);

/**
 * A call's maximum cost in millionths of a dollar, priced by the server's own rule
 * (protocol/price.ts), or null when the price table does not know the model (such a call is not
 * counted by spend either) or the API is not billed (count_tokens).
 *
 * Input: one token per byte of the request body. Byte-level BPE tokenizers never produce more
 * tokens than bytes of text, and images and documents travel as base64, whose bytes outnumber the
 * tokens they are billed as; the JSON around the messages only adds bytes. Priced at the dearer of
 * the model's input and cache-write rates, since the gateway cannot tell which the vendor applies.
 * Output: the request's cap, else {@link DEFAULT_OUTPUT_TOKENS}. Both rounded up (see {@link roundUp}).
 */
export function maxCostOf(api: Api, mr: ModelRequest, at: Date): number | null {
  if (!api.metered) return null;
  const input = roundUp(mr.bytes.length);
  const output = roundUp(mr.maxOutputTokens ?? DEFAULT_OUTPUT_TOKENS[api.vendor]);
  const key = `${at.toISOString().slice(0, 10)}\u0000${api.vendor}\u0000${mr.model}\u0000${input}\u0000${output}`;
  return cache.get(key, () => {
    const prices = [
      priceCall(api.vendor, mr.model, { input_tokens: input, output_tokens: output }, at),
      priceCall(api.vendor, mr.model, { input_tokens: 0, cache_write_tokens: input, output_tokens: output }, at),
    ].filter((p): p is number => p !== null);
    return prices.length > 0 ? Math.max(...prices) : null;
  });
}

/** What a finished call costs, priced as the server will price its `llm_call` (0 when nothing was billed or the model is unpriced). */
export function realCostOf(vendor: Vendor, model: string, usage: RecordedUsage | null, at: Date): number {
  return usage ? (priceCall(vendor, model, usage, at) ?? 0) : 0;
}
