import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { hookCommand } from "../command.ts";
import { commandMarker, hasCommand } from "../marker.ts";
import type { EntriesHost, HarnessAdapter, HookEntries } from "../types.ts";

/** Stella events that carry a step the recorder records. */
export const STELLA_EVENTS = ["SessionStart", "PreToolUse", "PostToolUse", "Stop"] as const;

const MARKER = commandMarker("stella");

function stellaHome(): string {
  return process.env.STELLA_HOME || join(homedir(), ".stella");
}

/** `stella.toml` wins over `settings.json` at the same scope, so it is the file to edit when it exists. */
function configPath(): string {
  const toml = join(stellaHome(), "stella.toml");
  return existsSync(toml) ? toml : join(stellaHome(), "settings.json");
}

function entries(host: EntriesHost): HookEntries {
  const out: HookEntries = {};
  for (const event of STELLA_EVENTS) {
    // Stella appends whatever a SessionStart hook prints to the system prompt, and SessionStart
    // cannot veto: the hook's answer there is for the recorder's sake only, so it goes nowhere.
    const quiet = event === "SessionStart" ? " >/dev/null" : "";
    out[event] = { type: "command", command: `${hookCommand(host, "stella")}${quiet}`, timeoutMs: 30_000 };
  }
  return out;
}

/** Stella: user-scope hooks (project hooks need a trusted repo); Claude's layout with `timeoutMs`. Stella need not be installed. */
export const stella: HarnessAdapter = {
  name: "stella",
  configPath,
  entries,
  isOurs: (h) => hasCommand(h, MARKER),
  // The matcher is a glob over tool names and only the tool events read it.
  matcher: (event) => (event === "PreToolUse" || event === "PostToolUse" ? "*" : undefined),
};
