import { sha256Hex, type Payload } from "../../protocol/index.ts";

type Usage = Payload<"llm_call">["usage"];

/** What makes two reports of a model call the same call: its vendor, message id, model and billed usage (on one chain). */
export interface CallIdentity {
  vendor: string;
  messageId: string;
  model: string;
  usage: Usage;
}

/** A model name without the date a vendor appends to the one asked for (`gpt-5` answered as `gpt-5-2025-08-07`). */
function undated(model: string): string {
  return model.replace(/-(?:\d{8}|\d{4}-\d{2}-\d{2})$/, "");
}

/**
 * The key of a call's identity on one chain (docs/collector.md, "Counted once"): the gateway's
 * `llm_call` of it is recorded under {@link carriedId}, and a usage log's report of the same call
 * on the same chain is matched to it once. Vendors reuse message ids (a local server, a replay), so
 * the id alone is not the call: a call of another chain, model or usage is another call.
 */
export function callKey(chain: string, c: CallIdentity): string {
  const u = c.usage;
  const parts = [
    chain,
    c.vendor,
    c.messageId,
    undated(c.model),
    u.input_tokens,
    u.output_tokens,
    u.cache_read_tokens ?? 0,
    u.cache_write_tokens ?? 0,
  ];
  return `gw-${sha256Hex(parts.join("\u0000")).slice(0, 40)}`;
}

/** The journal id of the gateway's n-th call (from 0) with one {@link callKey}: each call it carried is recorded. */
export function carriedId(key: string, n: number): string {
  return n === 0 ? key : `${key}.${n}`;
}

/** The id the gateway records its next call of a key under: the first the journal does not hold. */
export function nextCarriedId(has: (id: string) => boolean, key: string): string {
  for (let n = 0; ; n++) if (!has(carriedId(key, n))) return carriedId(key, n);
}

/** The suffix of the id marking a carried call as matched to a usage log's report of it. */
export const MATCHED = "~read";

/** The first call the gateway carried under a key that no usage log's report was matched to yet; null when none. */
export function unmatchedCarried(has: (id: string) => boolean, key: string): string | null {
  for (let n = 0; ; n++) {
    const id = carriedId(key, n);
    if (!has(id)) return null;
    if (!has(`${id}${MATCHED}`)) return id;
  }
}
