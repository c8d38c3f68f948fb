import { homedir } from "node:os";
import { join } from "node:path";
import { hookCommand } from "../command.ts";
import { commandMarker, hasCommand } from "../marker.ts";
import type { EntriesHost, HarnessAdapter, HookEntries } from "../types.ts";

/** Veto points: an answer is required there, and a hook that fails must block (failClosed). */
export const CURSOR_VETO_EVENTS = ["beforeSubmitPrompt", "preToolUse", "subagentStart"] as const;
/** Telemetry-only events (the generic tool hooks only: shell/MCP/file hooks fire for the same calls). */
export const CURSOR_TELEMETRY_EVENTS = [
  "sessionStart",
  "postToolUse",
  "postToolUseFailure",
  "subagentStop",
  "afterAgentResponse",
  "stop",
  "sessionEnd",
] as const;

const MARKER = commandMarker("cursor");

function entries(host: EntriesHost): HookEntries {
  const out: HookEntries = {};
  const command = hookCommand(host, "cursor");
  // No timeout: its unit is not settled (seconds or milliseconds), and Cursor's default is safe.
  for (const event of CURSOR_VETO_EVENTS) out[event] = { command, failClosed: true };
  for (const event of CURSOR_TELEMETRY_EVENTS) out[event] = { command, failClosed: false };
  return out;
}

/** Cursor: `~/.cursor/hooks.json` (`version: 1`, flat handler lists, camelCase events). No Claude hooks imported, no MCP entry. */
export const cursor: HarnessAdapter = {
  name: "cursor",
  configPath: () => join(homedir(), ".cursor", "hooks.json"),
  entries,
  isOurs: (h) => hasCommand(h, MARKER),
  layout: "flat",
  required: { version: 1 },
};
