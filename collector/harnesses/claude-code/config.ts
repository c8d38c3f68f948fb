import { homedir } from "node:os";
import { join } from "node:path";
import { HOOK_SECRET_HEADER } from "../../lib/loopback.ts";
import { hookCommand } from "../command.ts";
import type { EntriesHost, HarnessAdapter, HookEntries, JsonObject } from "../types.ts";
import { claudeProblems } from "./problems.ts";

/** Events that run `tacho hook --harness claude-code` as a command hook. */
export const COMMAND_EVENTS = [
  "SessionStart",
  "UserPromptSubmit",
  "PreToolUse",
  "PermissionRequest",
  "Notification",
  "Stop",
  "SubagentStart",
  "SubagentStop",
  "SessionEnd",
  "PreCompact",
] as const;
/** Tool-completion events, posted over HTTP straight to the recorder. */
export const HTTP_EVENTS = ["PostToolUse", "PostToolUseFailure"] as const;

const COMMAND_MARKER = /(?:^|[\s/\\"'])tacho(?:\.js)?["']? hook --harness claude-code(?:\s|$)/;
const URL_MARKER = /^https?:\/\/(?:127\.0\.0\.1|localhost)(?::\d+)?\/hooks\/claude-code$/;

function settingsPath(): string {
  return join(process.env.CLAUDE_CONFIG_DIR || join(homedir(), ".claude"), "settings.json");
}

/** True for a handler the collector wrote (found by its stable marker, whatever its other fields). */
function isOurs(handler: unknown): boolean {
  if (handler === null || typeof handler !== "object") return false;
  const h = handler as Record<string, unknown>;
  if (h.type === "command" && typeof h.command === "string") return COMMAND_MARKER.test(h.command);
  if (h.type === "http" && typeof h.url === "string") return URL_MARKER.test(h.url);
  return false;
}

function entries(host: EntriesHost): HookEntries {
  const out: Record<string, JsonObject> = {};
  for (const event of COMMAND_EVENTS) {
    // SessionEnd hooks share a 1.5 s budget unless a hook asks for more; the hook's own budget is 1.5 s.
    const timeout = event === "SessionEnd" ? 5 : 30;
    out[event] = { type: "command", command: hookCommand(host, "claude-code"), timeout };
  }
  for (const event of HTTP_EVENTS) {
    const url = `http://127.0.0.1:${host.ports.hooks}/hooks/claude-code`;
    // The recorder takes an HTTP hook only with the enrollment's secret (docs/collector.md, "Who may answer a hook").
    const headers = host.hook_secret ? { headers: { [HOOK_SECRET_HEADER]: host.hook_secret } } : {};
    out[event] = { type: "http", url, ...headers, timeout: 10 };
  }
  return out;
}

/** Claude Code: `hooks` in `$CLAUDE_CONFIG_DIR/settings.json` (or `~/.claude/settings.json`). */
export const claudeCode: HarnessAdapter = {
  name: "claude-code",
  configPath: settingsPath,
  entries,
  isOurs,
  problems: (file, host) => claudeProblems(file.path, file.json, `http://127.0.0.1:${host.ports.hooks}/hooks/claude-code`),
};
