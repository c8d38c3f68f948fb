import { chmodSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { ExitError } from "../lib/errors.ts";
import { flatOurs, flatWithEntries, groupedOurs } from "./flat.ts";
import { parseToml, withBlock } from "./toml.ts";
import type { HarnessAdapter, HookEntries, JsonObject } from "./types.ts";

/** A harness configuration as read: its path, its exact text (null when absent), its parsed content and format. */
export interface ConfigFile {
  path: string;
  text: string | null;
  json: JsonObject;
  format: "json" | "toml";
}

/** Whether the collector's entries in a configuration match what enroll writes. */
export type HookState = "present" | "missing" | "altered";

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Reads a harness's configuration; a file that is not a strict JSON object (or valid TOML) is an error and stays untouched. */
export function readConfig(adapter: HarnessAdapter): ConfigFile {
  const path = adapter.configPath();
  const format = path.endsWith(".toml") ? "toml" : "json";
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { path, text: null, json: {}, format };
    throw new ExitError(1, `cannot read ${path}: ${(err as Error).message}`);
  }
  if (format === "toml") return checked(adapter, { path, text, json: parseToml(path, text), format });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ExitError(
      1,
      `${path} is not valid JSON (${(err as Error).message}); fix it and run the command again (the file was left untouched)`,
    );
  }
  if (!isObject(json))
    throw new ExitError(1, `${path} does not hold a JSON object; fix it and run the command again (the file was left untouched)`);
  return checked(adapter, { path, text, json, format });
}

function checked(adapter: HarnessAdapter, file: ConfigFile): ConfigFile {
  const { path, json } = file;
  if (json.hooks !== undefined && !isObject(json.hooks))
    throw new ExitError(1, `${path}: "hooks" is not an object; fix it and run the command again (the file was left untouched)`);
  for (const [key, want] of Object.entries(adapter.required ?? {})) {
    if (json[key] !== undefined && JSON.stringify(json[key]) !== JSON.stringify(want)) {
      throw new ExitError(
        1,
        `${path}: "${key}" is ${JSON.stringify(json[key])}, and tacho writes hooks for ${JSON.stringify(want)} only (the file was left untouched)`,
      );
    }
  }
  return file;
}

/**
 * The new text of a configuration with our entries applied (or removed when null); null when
 * nothing changes. JSON is rewritten whole (2-space); in TOML only our marked block changes.
 */
export function plannedText(file: ConfigFile, adapter: HarnessAdapter, entries: HookEntries | null): string | null {
  if (file.format === "toml") {
    const next = withBlock(file.path, file.text ?? "", adapter, entries);
    return next === (file.text ?? "") ? null : next;
  }
  let next = withEntries(file.json, adapter, entries);
  if (entries && adapter.required) next = { ...adapter.required, ...next };
  return JSON.stringify(file.json) === JSON.stringify(next) ? null : `${JSON.stringify(next, null, 2)}\n`;
}

/**
 * The configuration with the collector's handlers replaced by `entries` (or removed when null).
 * Every other key, group and handler keeps its place and value. A group that held only our
 * handler is dropped with it; our fresh group takes the place of the first one we had.
 */
export function withEntries(json: JsonObject, adapter: HarnessAdapter, entries: HookEntries | null): JsonObject {
  if (adapter.layout === "flat") {
    const hooks = flatWithEntries(isObject(json.hooks) ? json.hooks : {}, adapter, entries);
    const next: JsonObject = { ...json };
    if (Object.keys(hooks).length > 0 || json.hooks !== undefined) next.hooks = hooks;
    return next;
  }
  const hooks: JsonObject = isObject(json.hooks) ? { ...json.hooks } : {};
  const events = new Set([...Object.keys(hooks), ...Object.keys(entries ?? {})]);
  for (const event of events) {
    const ours = entries?.[event];
    const matcher = adapter.matcher?.(event);
    const ourGroup = (h: JsonObject) => (matcher !== undefined ? { matcher, hooks: [h] } : { hooks: [h] });
    const groups = Array.isArray(hooks[event]) ? (hooks[event] as unknown[]) : null;
    if (groups === null) {
      if (ours) hooks[event] = [ourGroup(ours)];
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
      if (ours && !placed) out.push(ourGroup(ours));
      placed = true;
    }
    if (ours && !placed) out.push(ourGroup(ours));
    if (out.length > 0) hooks[event] = out;
    else delete hooks[event];
  }
  const next: JsonObject = { ...json };
  if (Object.keys(hooks).length > 0 || json.hooks !== undefined) next.hooks = hooks;
  return next;
}

/** Writes planned text over the configuration (atomically, same mode, through a symlink); false when there is nothing to write. */
export function writeConfig(file: ConfigFile, text: string | null): boolean {
  if (text === null) return false;
  // Write through a symlink (dotfile managers) rather than replacing it.
  let target = file.path;
  let mode = 0o600;
  try {
    target = realpathSync(file.path);
    mode = statSync(target).mode & 0o777;
  } catch {}
  mkdirSync(dirname(target), { recursive: true });
  const tmp = `${target}.tacho-${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode, flush: true });
  chmodSync(tmp, mode);
  renameSync(tmp, target);
  return true;
}

/** Compares the collector's handlers in a configuration with what enroll would write. */
export function hookState(
  json: JsonObject,
  adapter: HarnessAdapter,
  entries: HookEntries,
): { state: HookState; missing: string[]; altered: string[] } {
  const hooks = isObject(json.hooks) ? json.hooks : {};
  const oursIn = adapter.layout === "flat" ? flatOurs : groupedOurs;
  const missing: string[] = [];
  const altered: string[] = [];
  let found = 0;
  for (const [event, want] of Object.entries(entries)) {
    const ours = oursIn(hooks, adapter, event);
    found += ours.length;
    if (ours.length === 0) missing.push(event);
    else if (ours.length > 1 || JSON.stringify(ours[0]) !== JSON.stringify(want)) altered.push(event);
  }
  for (const event of Object.keys(hooks)) {
    if (!(event in entries) && oursIn(hooks, adapter, event).length > 0) altered.push(event);
  }
  const state: HookState =
    found === 0 && altered.length === 0 ? "missing" : missing.length === 0 && altered.length === 0 ? "present" : "altered";
  return { state, missing, altered };
}
