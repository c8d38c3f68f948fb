import type { HostConfig } from "../lib/state.ts";

/** A JSON object as parsed from a harness's configuration. */
export type JsonObject = { [key: string]: unknown };

/** The one hook handler the collector wants per event name. */
export type HookEntries = Record<string, JsonObject>;

/** What entries need from the enrollment (a placeholder is enough to check a file before enrolling). */
export type EntriesHost = Pick<HostConfig, "ports" | "hook_secret" | "hook_command">;

/** A reason the collector's hooks in a harness's configuration will not run (see tacho status). */
export interface HookProblem {
  state: "cannot run" | "disabled" | "not trusted";
  /** What is wrong, naming the file and the setting. */
  detail: string;
  /** What the user does about it. */
  fix: string;
}

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
  /** Settings of the harness's own that keep the hooks in `file` from running (disabled, not trusted). */
  problems?(file: { path: string; text: string | null; json: JsonObject }, host: EntriesHost): HookProblem[];
}
