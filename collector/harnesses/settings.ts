import { chmodSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { ExitError } from "../lib/errors.ts";
import { flatOurs, flatWithEntries, groupedOurs } from "./flat.ts";
import { insertChild, memberIndex, memberText, removeChild, setMemberText } from "./json-edit.ts";
import { noteCreated, removeCreated, wasCreated } from "./originals.ts";
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
 * The `hooks` object, or one event's list in it (`hooks.<event>`): the key its text is noted under
 * in originals.json when the user left it empty, so that removing our entries gives it back
 * rather than dropping it with our last entry.
 */
const hooksKey = (event?: string): string => (event === undefined ? "hooks" : `hooks.${event}`);
export const isHooksKey = (key: string): boolean => key === "hooks" || key.startsWith("hooks.");

/** Per hooks key, the exact text of a `hooks` object or event list that was empty before enroll. */
export type EmptyHooks = Readonly<Record<string, string>>;

/** The user's empty `hooks` object or event lists that applying `entries` writes into, each with its text and its value after. */
export function emptyHooksIn(file: ConfigFile, entries: HookEntries, next: string): { key: string; before: string; wrote: unknown }[] {
  const hooks = file.json.hooks;
  if (file.format !== "json" || file.text === null || !isObject(hooks)) return [];
  const after = (JSON.parse(next) as { hooks: JsonObject }).hooks;
  if (Object.keys(hooks).length === 0) return [{ key: hooksKey(), before: memberText(file.text, [], "hooks")!, wrote: after }];
  return Object.keys(entries)
    .filter((event) => Array.isArray(hooks[event]) && hooks[event].length === 0)
    .map((event) => ({ key: hooksKey(event), before: memberText(file.text!, ["hooks"], event)!, wrote: after[event] }));
}

/**
 * The new text of a configuration with our entries applied (or removed when null); null when
 * nothing changes. Only our entries change: in JSON they are inserted and removed as text (the
 * rest of the file keeps its bytes), in TOML they are one marked block. A `hooks` object or event
 * list in `empty` gets its noted text back when our entries go.
 */
export function plannedText(file: ConfigFile, adapter: HarnessAdapter, entries: HookEntries | null, empty: EmptyHooks = {}): string | null {
  if (file.format === "toml") {
    const next = withBlock(file.path, file.text ?? "", adapter, entries);
    return next === (file.text ?? "") ? null : next;
  }
  let want = withEntries(file.json, adapter, entries, empty);
  if (entries && adapter.required) want = { ...adapter.required, ...want };
  if (isDeepStrictEqual(want, file.json)) return null;
  if (file.text === null) return `${JSON.stringify(want, null, 2)}\n`;
  const next = editedText(file.text, file.json, adapter, entries, empty);
  // The text edits must give exactly what the rule above says; anything else is our bug, not the user's file.
  if (!isDeepStrictEqual(JSON.parse(next), want)) throw new Error(`editing ${file.path} gave a different result than planned`);
  return next;
}

const ourGroup = (adapter: HarnessAdapter, event: string, handler: JsonObject): JsonObject => {
  const matcher = adapter.matcher?.(event);
  return matcher !== undefined ? { matcher, hooks: [handler] } : { hooks: [handler] };
};

/** The JSON text with our handlers replaced, one insertion or removal at a time (see json-edit.ts). */
function editedText(text: string, json: JsonObject, adapter: HarnessAdapter, entries: HookEntries | null, empty: EmptyHooks): string {
  for (const [key, value] of Object.entries(adapter.required ?? {})) {
    if (entries && json[key] === undefined) text = insertChild(text, [], 0, value, key);
  }
  if (!isObject(json.hooks)) {
    const fresh = withEntries({}, adapter, entries).hooks;
    return fresh === undefined ? text : insertChild(text, [], -1, fresh, "hooks");
  }
  const hooks = json.hooks;
  const hadEvents = Object.keys(hooks).length > 0;
  for (const event of new Set([...Object.keys(hooks), ...Object.keys(entries ?? {})])) {
    const ours = entries?.[event];
    const list = hooks[event];
    const fresh = ours && (adapter.layout === "flat" ? ours : ourGroup(adapter, event, ours));
    if (list === undefined) {
      if (fresh) text = insertChild(text, ["hooks"], -1, [fresh], event);
      continue;
    }
    if (!Array.isArray(list)) continue;
    let place = -1;
    let left = list.length;
    for (let i = list.length - 1; i >= 0; i--) {
      const item = list[i];
      if (adapter.layout === "flat") {
        if (!adapter.isOurs(item)) continue;
        text = removeChild(text, ["hooks", event], i);
        left--;
        place = i;
        continue;
      }
      if (!isObject(item) || !Array.isArray(item.hooks) || !item.hooks.some((h) => adapter.isOurs(h))) continue;
      const kept = item.hooks.filter((h) => !adapter.isOurs(h));
      if (kept.length === 0) {
        text = removeChild(text, ["hooks", event], i);
        left--;
        place = i;
      } else {
        for (let j = item.hooks.length - 1; j >= 0; j--)
          if (adapter.isOurs(item.hooks[j])) text = removeChild(text, ["hooks", event, i, "hooks"], j);
        place = i + 1;
      }
    }
    if (fresh) text = insertChild(text, ["hooks", event], place, fresh);
    else if (left === 0 && list.length > 0) text = emptied(text, ["hooks"], event, empty[hooksKey(event)]);
  }
  const after = JSON.parse(text) as JsonObject;
  if (hadEvents && isObject(after.hooks) && Object.keys(after.hooks).length === 0) text = emptied(text, [], "hooks", empty[hooksKey()]);
  return text;
}

/** A member whose last entry of ours went: back to the user's empty text, or removed when tacho created it. */
function emptied(text: string, path: string[], key: string, before: string | undefined): string {
  return before === undefined ? removeChild(text, path, memberIndex(text, path, key)) : setMemberText(text, path, key, before);
}

/**
 * The configuration with the collector's handlers replaced by `entries` (or removed when null).
 * Every other key, group and handler keeps its place and value. A group that held only our
 * handler is dropped with it; our fresh group takes the place of the first one we had. An event
 * that is not a list (a common mistake: `"Stop": { "hooks": [...] }`) is refused, untouched. An
 * event list, or the hooks object, emptied of ours goes with it unless it is in `empty` (the user's).
 */
export function withEntries(json: JsonObject, adapter: HarnessAdapter, entries: HookEntries | null, empty: EmptyHooks = {}): JsonObject {
  const before = isObject(json.hooks) ? json.hooks : {};
  for (const event of Object.keys(entries ?? {})) {
    if (before[event] !== undefined && !Array.isArray(before[event]))
      throw new ExitError(
        1,
        `${adapter.configPath()}: hooks.${event} is ${typeof before[event] === "object" ? "an object" : `a ${typeof before[event]}`}, not a list${adapter.layout === "flat" ? " of handlers" : ` of matcher groups (write it as "${event}": [ { "hooks": [ ... ] } ])`}; fix it and run the command again (the file was left untouched)`,
      );
  }
  let hooks: JsonObject;
  if (adapter.layout === "flat") hooks = flatWithEntries(before, adapter, entries);
  else {
    hooks = { ...before };
    for (const event of new Set([...Object.keys(hooks), ...Object.keys(entries ?? {})])) {
      const ours = entries?.[event];
      const groups = Array.isArray(hooks[event]) ? (hooks[event] as unknown[]) : null;
      if (groups === null) {
        if (ours) hooks[event] = [ourGroup(adapter, event, ours)];
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
        if (ours && !placed) out.push(ourGroup(adapter, event, ours));
        placed = true;
      }
      if (ours && !placed) out.push(ourGroup(adapter, event, ours));
      hooks[event] = out;
    }
  }
  // A list or hooks object we emptied goes with our last entry; one the user left empty stays.
  for (const [event, list] of Object.entries(hooks)) {
    const was = before[event];
    if (Array.isArray(list) && list.length === 0 && Array.isArray(was) && was.length > 0 && !(hooksKey(event) in empty))
      delete hooks[event];
  }
  const next: JsonObject = { ...json };
  if (Object.keys(hooks).length > 0 || (json.hooks !== undefined && Object.keys(before).length === 0) || hooksKey() in empty)
    next.hooks = hooks;
  else delete next.hooks;
  return next;
}

/** Writes planned text over the configuration (atomically, same mode, through a symlink); false when there is nothing to write. */
export function writeConfig(file: ConfigFile, text: string | null): boolean {
  if (text === null) return false;
  // A file tacho created that holds nothing any more goes, with the directories tacho made for it.
  if (file.text !== null && isEmptyConfig(text, file.format) && wasCreated(file.path)) {
    removeCreated(file.path);
    return true;
  }
  if (file.text === null) noteCreated(file.path);
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

function isEmptyConfig(text: string, format: ConfigFile["format"]): boolean {
  if (format === "toml") return text.trim() === "";
  try {
    const json: unknown = JSON.parse(text);
    return isObject(json) && Object.keys(json).length === 0;
  } catch {
    return false;
  }
}

/** Compares the collector's handlers in a configuration with what enroll would write. */
export function hookState(
  json: JsonObject,
  adapter: HarnessAdapter,
  entries: HookEntries,
): { state: HookState; missing: string[]; altered: string[]; commands: string[] } {
  const hooks = isObject(json.hooks) ? json.hooks : {};
  const commands = new Set<string>();
  const oursIn = adapter.layout === "flat" ? flatOurs : groupedOurs;
  const missing: string[] = [];
  const altered: string[] = [];
  let found = 0;
  for (const [event, want] of Object.entries(entries)) {
    const ours = oursIn(hooks, adapter, event);
    for (const h of ours) if (isObject(h) && typeof h.command === "string") commands.add(h.command);
    found += ours.length;
    if (ours.length === 0) missing.push(event);
    else if (ours.length > 1 || JSON.stringify(ours[0]) !== JSON.stringify(want)) altered.push(event);
  }
  for (const event of Object.keys(hooks)) {
    if (!(event in entries) && oursIn(hooks, adapter, event).length > 0) altered.push(event);
  }
  const state: HookState =
    found === 0 && altered.length === 0 ? "missing" : missing.length === 0 && altered.length === 0 ? "present" : "altered";
  return { state, missing, altered, commands: [...commands] };
}
