import { ExitError } from "../lib/errors.ts";
import type { HostConfig } from "../lib/state.ts";
import { transientInstall } from "./command.ts";
import { commandTroubles } from "./health.ts";
import { adapterFor } from "./index.ts";
import { isDeepStrictEqual } from "node:util";
import { setMemberText } from "./json-edit.ts";
import { forgetSetting, noteSetting, settingOf, settingsOf } from "./originals.ts";
import { type ConfigFile, type EmptyHooks, emptyHooksIn, isHooksKey, plannedText, readConfig, writeConfig } from "./settings.ts";
import type { EntriesHost, HarnessAdapter, HookEntries, JsonObject } from "./types.ts";

/** What applying (or removing) the hook entries did to one harness's configuration. */
export interface HarnessResult {
  harness: string;
  config: string;
  changed: boolean;
  /** What the user must do now that the hooks changed (Codex: review and trust them). */
  action?: string;
}

function plan(host: EntriesHost, names: string[], action: "apply" | "remove") {
  return names.map((name) => {
    const adapter = adapterFor(name);
    const file = readConfig(adapter);
    if (action === "apply") {
      const entries = adapter.entries(host);
      return { name, adapter, file, entries, text: plannedText(file, adapter, entries) };
    }
    const text = plannedText(file, adapter, null, emptyHooksOf(file.path));
    return { name, adapter, file, entries: null, text: withRequiredBack(file, adapter, text) };
  });
}

/** The `hooks` object and event lists of the user's that were empty before enroll, with their text (noted by {@link noteEmptyHooks}). */
function emptyHooksOf(path: string): EmptyHooks {
  const out: Record<string, string> = {};
  for (const [key, { before }] of Object.entries(settingsOf(path))) if (isHooksKey(key) && before !== null) out[key] = before;
  return out;
}

/** Notes the user's empty `hooks` object or event lists an apply writes into, so a removal gives them back rather than dropping them. */
function noteEmptyHooks(file: ConfigFile, entries: HookEntries, text: string | null): void {
  if (text === null) return;
  for (const { key, before, wrote } of emptyHooksIn(file, entries, text)) noteSetting(file.path, key, before, wrote);
}

/** The removal's text with the top-level keys tacho added for its entries (Cursor's `version`) given back as they were. */
function withRequiredBack(file: ConfigFile, adapter: HarnessAdapter, text: string | null): string | null {
  let next = text ?? file.text;
  if (next === null || file.format !== "json") return text;
  for (const key of Object.keys(adapter.required ?? {})) {
    const record = settingOf(file.path, key);
    if (record && isDeepStrictEqual((JSON.parse(next) as JsonObject)[key], record.wrote))
      next = setMemberText(next, [], key, record.before);
  }
  return next === file.text ? null : next;
}

/** Notes the top-level keys an apply adds for its entries (Cursor's `version`), so a removal takes them out again. */
function noteRequired(file: ConfigFile, adapter: HarnessAdapter, text: string | null): void {
  if (text === null || file.format !== "json") return;
  for (const [key, value] of Object.entries(adapter.required ?? {}))
    if (file.json[key] === undefined) noteSetting(file.path, key, null, value);
}

/**
 * Writes (or removes) the collector's entries in each harness's configuration. Every file is
 * read and its new text computed first, so a broken one stops the command before any file is written.
 */
export function applyHarnesses(host: HostConfig, harnesses: string[], action: "apply" | "remove"): HarnessResult[] {
  const results = plan(host, harnesses, action).map(({ name, adapter, file, entries, text }) => {
    if (entries) {
      noteRequired(file, adapter, text);
      noteEmptyHooks(file, entries, text);
    }
    const changed = writeConfig(file, text);
    if (action === "remove") {
      for (const key of Object.keys(adapter.required ?? {})) forgetSetting(file.path, key);
      for (const key of Object.keys(settingsOf(file.path))) if (isHooksKey(key)) forgetSetting(file.path, key);
    }
    const result: HarnessResult = { harness: name, config: file.path, changed };
    if (changed && action === "apply" && adapter.afterWrite) result.action = adapter.afterWrite;
    return result;
  });
  return results;
}

/** Reads every named harness's configuration and plans its entries, so a broken one fails before anything is sent or written. */
export function checkHarnessConfigs(harnesses: string[], host: EntriesHost = { ports: { hooks: 47110, gateway: 47111 } }): void {
  plan(host, harnesses, "apply");
}

/**
 * Runs every command the harnesses' entries would run, once, the way a harness runs it (a shell
 * with an empty PATH), before anything is written; refuses with the reason when one does not start.
 */
export function proveHookCommands(host: EntriesHost, harnesses: string[]): void {
  const program = host.hook_command ?? "tacho";
  const transient = transientInstall(program);
  if (transient) throw new ExitError(1, `${transient}; nothing was written`);
  const commands = new Set([`${program} hook`]);
  for (const name of harnesses)
    for (const handler of Object.values(adapterFor(name).entries(host)))
      if (typeof handler.command === "string") commands.add(handler.command);
  const troubles = commandTroubles([...commands]);
  if (troubles.length === 0) return;
  throw new ExitError(
    1,
    [
      "the hook command does not run from a shell with an empty PATH (as a harness may run it), so nothing was written:",
      ...troubles.map((t) => `  ${t.detail}`),
      `  ${process.env.TACHO_HOOK_COMMAND ? "TACHO_HOOK_COMMAND is set: unset it, or give the absolute paths of a Node 22.18+ and of tacho" : "install the collector (npm install -g ./dist/oxagen-collector-<version>.tgz) and run its tacho"}`,
    ].join("\n"),
  );
}
