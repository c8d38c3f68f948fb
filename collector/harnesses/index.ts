import { HARNESSES } from "./answers.cjs";
import { UsageError } from "../lib/errors.ts";
import { claudeCode } from "./claude-code/config.ts";
import { codex } from "./codex/config.ts";
import { cursor } from "./cursor/config.ts";
import { stella } from "./stella/config.ts";
import type { HarnessAdapter } from "./types.ts";

const ADAPTERS: Record<string, HarnessAdapter> = { "claude-code": claudeCode, codex, cursor, stella };

/** The adapter for a harness name; a usage error for an unknown harness or one with no adapter yet. */
export function adapterFor(name: string): HarnessAdapter {
  const adapter = ADAPTERS[name];
  if (adapter) return adapter;
  if (HARNESSES.includes(name))
    throw new UsageError(`harness ${name} has no adapter in this collector yet; supported: ${Object.keys(ADAPTERS).join(", ")}`);
  throw new UsageError(`unknown harness ${JSON.stringify(name)}; expected one of ${HARNESSES.join(", ")}`);
}

/** Parses a `--harness a,b` list: trimmed, deduplicated, each with an adapter. */
export function harnessList(value: string | undefined): string[] {
  if (!value) return [];
  const names = [
    ...new Set(
      value
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  for (const name of names) adapterFor(name);
  return names;
}
