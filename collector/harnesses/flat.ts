import type { HarnessAdapter, HookEntries, JsonObject } from "./types.ts";

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Cursor's flat layout (`hooks: { event: [handler] }`): our handler replaces the first one of
 * ours in each list (appended otherwise); every other handler keeps its place and value.
 */
export function flatWithEntries(hooksIn: JsonObject, adapter: HarnessAdapter, entries: HookEntries | null): JsonObject {
  const hooks: JsonObject = { ...hooksIn };
  for (const event of new Set([...Object.keys(hooks), ...Object.keys(entries ?? {})])) {
    const ours = entries?.[event];
    const list = Array.isArray(hooks[event]) ? (hooks[event] as unknown[]) : null;
    if (list === null) {
      if (ours) hooks[event] = [ours];
      continue;
    }
    const out: unknown[] = [];
    let placed = false;
    for (const h of list) {
      if (!adapter.isOurs(h)) out.push(h);
      else if (ours && !placed) {
        out.push(ours);
        placed = true;
      }
    }
    if (ours && !placed) out.push(ours);
    hooks[event] = out;
  }
  return hooks;
}

/** Our handlers per event in a flat layout. */
export function flatOurs(hooks: JsonObject, adapter: HarnessAdapter, event: string): unknown[] {
  const list = hooks[event];
  return Array.isArray(list) ? list.filter((h) => adapter.isOurs(h)) : [];
}

/** Our handlers per event in the grouped layout. */
export function groupedOurs(hooks: JsonObject, adapter: HarnessAdapter, event: string): unknown[] {
  const groups = hooks[event];
  if (!Array.isArray(groups)) return [];
  return groups.flatMap((g) => (isObject(g) && Array.isArray(g.hooks) ? g.hooks.filter((h) => adapter.isOurs(h)) : []));
}
