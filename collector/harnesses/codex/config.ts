import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { tachoCommand } from "../claude-code/config.ts";
import { commandMarker, hasCommand } from "../marker.ts";
import { BEGIN } from "../toml.ts";
import type { HarnessAdapter, HookEntries } from "../types.ts";

/** Codex events that carry a step the recorder records (PreCompact/PostCompact record nothing). */
export const CODEX_EVENTS = [
  "SessionStart",
  "UserPromptSubmit",
  "PreToolUse",
  "PermissionRequest",
  "PostToolUse",
  "Stop",
  "SubagentStart",
  "SubagentStop",
  "SessionEnd",
] as const;

const MARKER = commandMarker("codex");

function codexHome(): string {
  return process.env.CODEX_HOME || join(homedir(), ".codex");
}

/**
 * `$CODEX_HOME/hooks.json`, unless the hooks live in `config.toml`: our block is there already,
 * or config.toml defines hooks and there is no hooks.json (both at once make Codex warn at start).
 */
function configPath(): string {
  const json = join(codexHome(), "hooks.json");
  const toml = join(codexHome(), "config.toml");
  let text = "";
  try {
    text = readFileSync(toml, "utf8");
  } catch {
    return json;
  }
  if (text.includes(BEGIN)) return toml;
  const definesHooks = /^\s*(?:\[\[?\s*hooks\s*[.\]]|hooks\s*[.=])/m.test(text);
  return definesHooks && !existsSync(json) ? toml : json;
}

function entries(): HookEntries {
  const out: HookEntries = {};
  // SessionEnd hooks may take at most 3 s in Codex.
  for (const event of CODEX_EVENTS)
    out[event] = { type: "command", command: `${tachoCommand()} hook --harness codex`, timeout: event === "SessionEnd" ? 3 : 30 };
  return out;
}

/** Codex: `hooks` in `$CODEX_HOME/hooks.json` (or a marked block in `config.toml`); Claude's layout. */
export const codex: HarnessAdapter = {
  name: "codex",
  configPath,
  entries,
  isOurs: (h) => hasCommand(h, MARKER),
  afterWrite: "Codex runs new or changed hooks only once you trust them: open Codex, run /hooks, review and trust the tacho hooks",
};
