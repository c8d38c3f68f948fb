import { readFileSync } from "node:fs";
import type { HookProblem, JsonObject } from "../types.ts";

/** Where Claude Code reads managed (organisation) settings on this platform. */
function managedSettingsPath(): string {
  return process.platform === "darwin"
    ? "/Library/Application Support/ClaudeCode/managed-settings.json"
    : "/etc/claude-code/managed-settings.json";
}

function readJson(path: string): JsonObject | null {
  try {
    const v: unknown = JSON.parse(readFileSync(path, "utf8"));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as JsonObject) : null;
  } catch {
    return null;
  }
}

/** Claude Code's URL patterns: `*` matches anything, everything else literally. */
function urlAllowed(pattern: string, url: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split("*")
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
  );
  return re.test(url);
}

/**
 * The settings that keep our hooks from running: `disableAllHooks` (user or managed settings),
 * `allowManagedHooksOnly` (managed), and an `allowedHttpHookUrls` that leaves out our HTTP hook's URL.
 */
export function claudeProblems(userPath: string, user: JsonObject, hookUrl: string): HookProblem[] {
  const out: HookProblem[] = [];
  const managedPath = managedSettingsPath();
  const managed = readJson(managedPath);
  if (user.disableAllHooks === true)
    out.push({
      state: "disabled",
      detail: `"disableAllHooks": true in ${userPath} turns every hook off`,
      fix: `remove "disableAllHooks" from ${userPath}`,
    });
  if (managed?.disableAllHooks === true || managed?.allowManagedHooksOnly === true)
    out.push({
      state: "disabled",
      detail: `${managedPath} (managed settings) sets ${managed.disableAllHooks === true ? '"disableAllHooks": true' : '"allowManagedHooksOnly": true'}, so user hooks do not run`,
      fix: "ask whoever manages this computer's Claude Code settings to allow the tacho hooks",
    });
  for (const [path, settings] of [
    [userPath, user],
    [managedPath, managed],
  ] as const) {
    const allowed = settings?.allowedHttpHookUrls;
    if (!Array.isArray(allowed)) continue;
    if (allowed.some((p) => typeof p === "string" && urlAllowed(p, hookUrl))) continue;
    out.push({
      state: "disabled",
      detail: `"allowedHttpHookUrls" in ${path} does not allow ${hookUrl}, so finished tool calls are not recorded`,
      fix: `add "${new URL(hookUrl).origin}/*" to "allowedHttpHookUrls" in ${path}`,
    });
  }
  return out;
}
