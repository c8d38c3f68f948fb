import { chmodSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { ExitError } from "../lib/errors.ts";
import type { HarnessAdapter, HookEntries, JsonObject } from "./types.ts";

/** A harness configuration as read: its path, its exact text (null when absent) and its JSON. */
export interface ConfigFile {
  path: string;
  text: string | null;
  json: JsonObject;
}

/** Whether the collector's entries in a configuration match what enroll writes. */
export type HookState = "present" | "missing" | "altered";

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Reads a harness's configuration; a file that is not a strict JSON object is an error and stays untouched. */
export function readConfig(adapter: HarnessAdapter): ConfigFile {
  const path = adapter.configPath();
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { path, text: null, json: {} };
    throw new ExitError(1, `cannot read ${path}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ExitError(1, `${path} is not valid JSON (${(err as Error).message}); fix it and run the command again (the file was left untouched)`);
  }
  if (!isObject(json)) throw new ExitError(1, `${path} does not hold a JSON object; fix it and run the command again (the file was left untouched)`);
  if (json.hooks !== undefined && !isObject(json.hooks)) throw new ExitError(1, `${path}: "hooks" is not an object; fix it and run the command again (the file was left untouched)`);
  return { path, text, json };
}

/**
 * The configuration with the collector's handlers replaced by `entries` (or removed when null).
 * Every other key, group and handler keeps its place and value. A group that held only our
 * handler is dropped with it; our fresh group takes the place of the first one we had.
 */
export function withEntries(json: JsonObject, adapter: HarnessAdapter, entries: HookEntries | null): JsonObject {
  const hooks: JsonObject = isObject(json.hooks) ? { ...json.hooks } : {};
  const events = new Set([...Object.keys(hooks), ...Object.keys(entries ?? {})]);
  for (const event of events) {
    const ours = entries?.[event];
    const groups = Array.isArray(hooks[event]) ? (hooks[event] as unknown[]) : null;
    if (groups === null) {
      if (ours) hooks[event] = [{ hooks: [ours] }];
      continue;
    }
    const out: unknown[] = [];
    let placed = false;
    for (const group of groups) {
      if (!isObject(group) || !Array.isArray(group.hooks) || !group.hooks.some((h) => adapter.isOurs(h))) {
        out.push(group);
        continue;
      }
      const kept = group.hooks.filter((h) => !adapter.isOurs(h));
      if (kept.length > 0) out.push({ ...group, hooks: kept });
      if (ours && !placed) out.push({ hooks: [ours] });
      placed = true;
    }
    if (ours && !placed) out.push({ hooks: [ours] });
    if (out.length > 0) hooks[event] = out;
    else delete hooks[event];
  }
  const next: JsonObject = { ...json };
  if (Object.keys(hooks).length > 0 || json.hooks !== undefined) next.hooks = hooks;
  return next;
}

/** Writes the configuration back (2-space JSON, atomically, same mode); returns false when nothing changed. */
export function writeConfig(file: ConfigFile, next: JsonObject): boolean {
  if (JSON.stringify(file.json) === JSON.stringify(next)) return false;
  // Write through a symlink (dotfile managers) rather than replacing it.
  let target = file.path;
  let mode = 0o600;
  try {
    target = realpathSync(file.path);
    mode = statSync(target).mode & 0o777;
  } catch {}
  mkdirSync(dirname(target), { recursive: true });
  const tmp = `${target}.tacho-${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(next, null, 2)}\n`, { mode, flush: true });
  chmodSync(tmp, mode);
  renameSync(tmp, target);
  return true;
}

/** Compares the collector's handlers in a configuration with what enroll would write. */
export function hookState(json: JsonObject, adapter: HarnessAdapter, entries: HookEntries): { state: HookState; missing: string[]; altered: string[] } {
  const hooks = isObject(json.hooks) ? json.hooks : {};
  const missing: string[] = [];
  const altered: string[] = [];
  let found = 0;
  for (const [event, want] of Object.entries(entries)) {
    const groups = Array.isArray(hooks[event]) ? (hooks[event] as unknown[]) : [];
    const ours = groups.flatMap((g) => (isObject(g) && Array.isArray(g.hooks) ? g.hooks.filter((h) => adapter.isOurs(h)) : []));
    found += ours.length;
    if (ours.length === 0) missing.push(event);
    else if (ours.length > 1 || JSON.stringify(ours[0]) !== JSON.stringify(want)) altered.push(event);
  }
  for (const [event, groups] of Object.entries(hooks)) {
    if (event in entries || !Array.isArray(groups)) continue;
    if (groups.some((g) => isObject(g) && Array.isArray(g.hooks) && g.hooks.some((h) => adapter.isOurs(h)))) altered.push(event);
  }
  const state: HookState = found === 0 && altered.length === 0 ? "missing" : missing.length === 0 && altered.length === 0 ? "present" : "altered";
  return { state, missing, altered };
}
