import { ExitError } from "../lib/errors.ts";
import type { HostConfig } from "../lib/state.ts";
import { transientInstall } from "./command.ts";
import { commandTroubles } from "./health.ts";
import { adapterFor } from "./index.ts";
import { plannedText, readConfig, writeConfig } from "./settings.ts";
import type { EntriesHost } from "./types.ts";

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
    return { name, adapter, file, text: plannedText(file, adapter, action === "apply" ? adapter.entries(host) : null) };
  });
}

/**
 * Writes (or removes) the collector's entries in each harness's configuration. Every file is
 * read and its new text computed first, so a broken one stops the command before any file is written.
 */
export function applyHarnesses(host: HostConfig, harnesses: string[], action: "apply" | "remove"): HarnessResult[] {
  const results = plan(host, harnesses, action).map(({ name, adapter, file, text }) => {
    const changed = writeConfig(file, text);
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
