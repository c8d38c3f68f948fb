/** A JSON object parsed from text; null when the text is not one (corrupt, truncated, another JSON value). */
export function parseObject(text: string): Record<string, unknown> | null {
  try {
    return obj(JSON.parse(text));
  } catch {
    return null;
  }
}

/** The value as a JSON object; null when it is not one (null, an array, a scalar). */
export function obj(v: unknown): Record<string, unknown> | null {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

/** A non-empty string of at most `max` characters; undefined otherwise. */
export function str(v: unknown, max = 256): string | undefined {
  return typeof v === "string" && v.length > 0 && v.length <= max ? v : undefined;
}

/** A positive count (a token count, say), rounded down; 0 for anything else. */
export function count(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}
