import type { HostConfig } from "../lib/state.ts";

/** A JSON object as parsed from a harness's configuration. */
export type JsonObject = { [key: string]: unknown };

/** The one hook handler the collector wants per event name. */
export type HookEntries = Record<string, JsonObject>;

/**
 * What the collector needs to know about one harness whose configuration uses Claude Code's
 * shape (`hooks: { Event: [ { matcher?, hooks: [handler] } ] }`). Codex and Stella use the same
 * shape; Cursor's adapter will need its own merge.
 */
export interface HarnessAdapter {
  name: string;
  configPath(): string;
  entries(host: HostConfig): HookEntries;
  isOurs(handler: unknown): boolean;
}
