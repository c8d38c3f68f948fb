import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { parse } from "smol-toml";
import type { HookProblem, JsonObject } from "../types.ts";

// Codex runs a user's command hook only once it is trusted: `[hooks.state."<file>:<event>:<group>:<handler>"]`
// in config.toml holds `trusted_hash`, the hash of the hook as Codex normalizes it, and `enabled`.
// The normalization and hash follow codex-rs (hooks/src/engine/discovery.rs `command_hook_hash`,
// config/src/fingerprint.rs `version_for_toml`); test/harnesses checks them against the real Codex.

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === "object" && !Array.isArray(v);

/** Codex's label for an event in state keys and hashes: `PreToolUse` → `pre_tool_use`. */
export function eventLabel(event: string): string {
  return event.replace(/(?<!^)([A-Z])/g, "_$1").toLowerCase();
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (isObject(value))
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical(value[k])]),
    );
  return value;
}

/** The hash Codex trusts a command hook by (`sha256:<hex>`). */
export function trustHash(event: string, matcher: string | undefined, handler: JsonObject): string {
  const given = typeof handler.timeout === "number" ? handler.timeout : undefined;
  const timeout = event === "SessionEnd" ? Math.min(Math.max(given ?? 1, 1), 3) : Math.max(given ?? 600, 1);
  const normalized: JsonObject = { type: "command", command: handler.command, timeout, async: handler.async === true };
  if (typeof handler.statusMessage === "string") normalized.statusMessage = handler.statusMessage;
  const identity: JsonObject = { event_name: eventLabel(event), hooks: [normalized] };
  // Codex ignores the matcher of these events, and drops it before hashing.
  if (matcher !== undefined && event !== "UserPromptSubmit" && event !== "Stop") identity.matcher = matcher;
  return `sha256:${createHash("sha256")
    .update(JSON.stringify(canonical(identity)))
    .digest("hex")}`;
}

/** config.toml's `[hooks.state]` table and `[features]`, or empty when there is none (or it does not parse). */
export function readCodexSettings(configToml: string): { state: Record<string, JsonObject>; features: JsonObject } {
  try {
    const toml = parse(readFileSync(configToml, "utf8")) as JsonObject;
    const hooks = isObject(toml.hooks) ? toml.hooks : {};
    const state = isObject(hooks.state) ? (hooks.state as Record<string, JsonObject>) : {};
    return { state, features: isObject(toml.features) ? toml.features : {} };
  } catch {
    return { state: {}, features: {} };
  }
}

/**
 * What keeps our hooks in a Codex hooks file (`hooks.json` or config.toml) from running: hooks
 * turned off in `[features]`, a hook disabled in /hooks, or a hook not (or no longer) trusted.
 */
export function codexProblems(
  path: string,
  json: JsonObject,
  configToml: string,
  isOurs: (h: unknown) => boolean,
  fix: string,
): HookProblem[] {
  const { state, features } = readCodexSettings(configToml);
  const out: HookProblem[] = [];
  for (const flag of ["hooks", "codex_hooks"]) {
    if (features[flag] === false)
      out.push({
        state: "disabled",
        detail: `[features] ${flag} = false in ${configToml} turns Codex's hooks off`,
        fix: `remove "${flag} = false" from [features] in ${configToml}`,
      });
  }
  const disabled: string[] = [];
  const untrusted: string[] = [];
  const changed: string[] = [];
  const events = isObject(json.hooks) ? json.hooks : {};
  for (const [event, groups] of Object.entries(events)) {
    if (!Array.isArray(groups)) continue;
    groups.forEach((group, g) => {
      if (!isObject(group) || !Array.isArray(group.hooks)) return;
      group.hooks.forEach((handler, h) => {
        if (!isOurs(handler) || !isObject(handler)) return;
        const s = state[`${path}:${eventLabel(event)}:${g}:${h}`];
        const matcher = typeof group.matcher === "string" ? group.matcher : undefined;
        if (s?.enabled === false) disabled.push(event);
        else if (typeof s?.trusted_hash !== "string") untrusted.push(event);
        else if (s.trusted_hash !== trustHash(event, matcher, handler)) changed.push(event);
      });
    });
  }
  if (disabled.length)
    out.push({
      state: "disabled",
      detail: `Codex's /hooks has the tacho hooks for ${disabled.join(", ")} turned off`,
      fix: "open Codex, run /hooks and turn the tacho hooks on",
    });
  if (untrusted.length || changed.length)
    out.push({
      state: "not trusted",
      detail: [
        untrusted.length ? `the tacho hooks for ${untrusted.join(", ")} are not trusted yet` : "",
        changed.length ? `the tacho hooks for ${changed.join(", ")} changed since they were trusted` : "",
      ]
        .filter(Boolean)
        .join("; "),
      fix,
    });
  return out;
}
