import { ExitError } from "../lib/errors.ts";
import { isPlainHookCommand, probeHookCommand } from "./command.ts";
import { adapterFor } from "./index.ts";
import { hookState, readConfig } from "./settings.ts";
import type { EntriesHost, HookProblem } from "./types.ts";

/** One harness's hooks as `tacho status` reports them. */
export interface HarnessHealth {
  harness: string;
  config: string;
  /** "present" only when they are all there, run, and the harness lets them run. */
  hooks: "present" | "present but cannot run" | "present but disabled" | "present but not trusted" | "missing" | "altered" | "unreadable";
  missing?: string[];
  altered?: string[];
  problems?: HookProblem[];
  /** Why the configuration could not be read. */
  problem?: string;
}

export const REWRITE_FIX =
  "run tacho enroll with the tacho you want the hooks to run; it rewrites them with that tacho and the Node running it";

/** Runs each hook command once (empty PATH, records nothing); one trouble per command that does not start. */
export function commandTroubles(commands: string[]): HookProblem[] {
  const out: HookProblem[] = [];
  for (const command of commands) {
    if (!isPlainHookCommand(command)) {
      out.push({
        state: "cannot run",
        detail: `${command}: not the command tacho writes (other shell syntax in it), so it was not run`,
        fix: REWRITE_FIX,
      });
      continue;
    }
    const probe = probeHookCommand(command);
    if (!probe.ok) out.push({ state: "cannot run", detail: `${command}: ${probe.problem}`, fix: REWRITE_FIX });
  }
  return out;
}

/**
 * Checks one harness: are our entries there as enroll writes them, does each command they run
 * start (run once, from a shell with an empty PATH), and does the harness let them run.
 */
export function harnessHealth(host: EntriesHost, name: string): HarnessHealth {
  try {
    const adapter = adapterFor(name);
    const file = readConfig(adapter);
    const s = hookState(file.json, adapter, adapter.entries(host));
    const problems = s.state === "missing" ? [] : [...commandTroubles(s.commands), ...(adapter.problems?.(file, host) ?? [])];
    const hooks = s.state === "present" && problems.length ? (`present but ${problems[0]!.state}` as const) : s.state;
    return {
      harness: name,
      config: file.path,
      hooks,
      ...(s.missing.length && s.state !== "missing" ? { missing: s.missing } : {}),
      ...(s.altered.length ? { altered: s.altered } : {}),
      ...(problems.length ? { problems } : {}),
    };
  } catch (err) {
    if (!(err instanceof ExitError)) throw err;
    return { harness: name, config: "", hooks: "unreadable", problem: err.message };
  }
}
