import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { tachoCommand } from "../claude-code/config.ts";
import { commandMarker, hasCommand } from "../marker.ts";
import type { HarnessAdapter, HookEntries } from "../types.ts";

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

function entries(): HookEntries {
  const out: HookEntries = {};
  for (const event of STELLA_EVENTS)
    out[event] = { type: "command", command: `${tachoCommand()} hook --harness stella`, timeoutMs: 30_000 };
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
