import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { parse } from "smol-toml";
import { hookCommand } from "../command.ts";
import { commandMarker, hasCommand } from "../marker.ts";
import { BEGIN } from "../toml.ts";
import type { EntriesHost, HarnessAdapter, HookEntries } from "../types.ts";
import { codexProblems } from "./trust.ts";

/** Codex events that carry a step the recorder records (PreCompact/PostCompact record nothing). */
export const CODEX_EVENTS = [
  "SessionStart",
  "UserPromptSubmit",
  "PreToolUse",
  "PermissionRequest",
  "PostToolUse",
  "Stop",
  // An interrupted turn fires Interrupt instead of Stop: the recorder closes the turn on it.
  "Interrupt",
  "SubagentStart",
  "SubagentStop",
  "SessionEnd",
] as const;

const MARKER = commandMarker("codex");
const TRUST = "open Codex, run /hooks, review the tacho hooks and trust them";

function codexHome(): string {
  return process.env.CODEX_HOME || join(homedir(), ".codex");
}

/**
 * True when config.toml defines hook handlers: a `[hooks]` event table (`[hooks.state]` is trust,
 * `[features] hooks` a switch). A file that does not parse counts, so the error names it.
 */
function tomlDefinesHooks(text: string): boolean {
  try {
    const hooks = (parse(text) as { hooks?: unknown }).hooks;
    return hooks !== null && typeof hooks === "object" && Object.keys(hooks).some((k) => k !== "state");
  } catch {
    return true;
  }
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
  return tomlDefinesHooks(text) && !existsSync(json) ? toml : json;
}

function entries(host: EntriesHost): HookEntries {
  const out: HookEntries = {};
  // SessionEnd and Interrupt hooks may take at most 3 s in Codex (it clamps them, with a warning).
  for (const event of CODEX_EVENTS)
    out[event] = {
      type: "command",
      command: hookCommand(host, "codex"),
      timeout: event === "SessionEnd" || event === "Interrupt" ? 3 : 30,
    };
  return out;
}

/** Codex: `hooks` in `$CODEX_HOME/hooks.json` (or a marked block in `config.toml`); Claude's layout. */
export const codex: HarnessAdapter = {
  name: "codex",
  configPath,
  entries,
  isOurs: (h) => hasCommand(h, MARKER),
  afterWrite: `Codex runs new or changed hooks only once you trust them: ${TRUST}`,
  problems: (file) => codexProblems(file.path, file.json, join(codexHome(), "config.toml"), (h) => hasCommand(h, MARKER), TRUST),
};
