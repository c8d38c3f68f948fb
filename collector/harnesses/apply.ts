import { adapterFor } from "./index.ts";
import { readConfig, withEntries, writeConfig } from "./settings.ts";
import type { HostConfig } from "../lib/state.ts";

/** What applying (or removing) the hook entries did to one harness's configuration. */
export interface HarnessResult {
  harness: string;
  config: string;
  changed: boolean;
}

/**
 * Writes (or removes) the collector's entries in each harness's configuration. Every file is
 * read and checked first, so a broken one stops the command before any file is written.
 */
export function applyHarnesses(host: HostConfig, harnesses: string[], action: "apply" | "remove"): HarnessResult[] {
  const files = harnesses.map((name) => {
    const adapter = adapterFor(name);
    return { name, adapter, file: readConfig(adapter) };
  });
  return files.map(({ name, adapter, file }) => {
    const next = withEntries(file.json, adapter, action === "apply" ? adapter.entries(host) : null);
    return { harness: name, config: file.path, changed: writeConfig(file, next) };
  });
}

/** Reads every named harness's configuration, so a broken one fails before anything is sent or written. */
export function checkHarnessConfigs(harnesses: string[]): void {
  for (const name of harnesses) readConfig(adapterFor(name));
}
