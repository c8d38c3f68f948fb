import type { HostConfig } from "../lib/state.ts";

/** A JSON object as parsed from a harness's configuration. */
export type JsonObject = { [key: string]: unknown };

/** The one hook handler the collector wants per event name. */
export type HookEntries = Record<string, JsonObject>;

/** What entries need from the enrollment (a placeholder is enough to check a file before enrolling). */
export type EntriesHost = Pick<HostConfig, "ports" | "hook_secret">;

/**
 * What the collector needs to know about one harness's hook configuration. The file's format
 * follows its extension (`.json`, or `.toml`, where our entries are a marked text block). The
 * layout is Claude Code's (`hooks: { Event: [ { matcher?, hooks: [handler] } ] }`; Codex and
 * Stella too) unless `flat` (Cursor: `hooks: { event: [handler] }`).
 */
export interface HarnessAdapter {
  name: string;
  configPath(): string;
  entries(host: EntriesHost): HookEntries;
  isOurs(handler: unknown): boolean;
  layout?: "grouped" | "flat";
  /** The matcher our group carries for an event (grouped layout), if any. */
  matcher?(event: string): string | undefined;
  /** Top-level keys a written file must hold (Cursor's `version: 1`); a file holding other values is refused. */
  required?: JsonObject;
  /** What the user must do after our hooks were written or changed (Codex: trust them). */
  afterWrite?: string;
}
