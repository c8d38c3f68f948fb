import { parse, TomlError } from "smol-toml";
import { ExitError } from "../lib/errors.ts";
import type { HarnessAdapter, HookEntries, JsonObject } from "./types.ts";

// Our entries live between these lines, so the rest of the user's file stays byte for byte.
export const BEGIN = "# >>> tacho hooks: written by tacho enroll, removed by tacho reassign; edit outside this block >>>";
export const END = "# <<< tacho hooks <<<";
/** The lines around what `tacho enroll --gateway` writes into a TOML config (Codex's, Stella's). */
export const GATEWAY_BEGIN = "# >>> tacho gateway: written by tacho enroll --gateway, removed by tacho reassign --no-gateway >>>";
export const GATEWAY_END = "# <<< tacho gateway <<<";

/** Parses TOML text; a clear error (the file left untouched) when it is not valid TOML. */
export function parseToml(path: string, text: string): JsonObject {
  try {
    return parse(text) as JsonObject;
  } catch (err) {
    const why = err instanceof TomlError ? `line ${err.line}, column ${err.column}: ${err.message.split("\n")[0]}` : (err as Error).message;
    throw new ExitError(1, `${path} is not valid TOML (${why}); fix it and run the command again (the file was left untouched)`);
  }
}

function value(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  throw new Error(`cannot write ${typeof v} as a TOML hook field`);
}

/** Our block: one `[[hooks.Event]]` group per event, each with our one handler. */
export function renderBlock(adapter: HarnessAdapter, entries: HookEntries): string {
  const lines = [BEGIN];
  for (const [event, handler] of Object.entries(entries)) {
    const key = /^[A-Za-z0-9_-]+$/.test(event) ? event : JSON.stringify(event);
    lines.push(`[[hooks.${key}]]`);
    const matcher = adapter.matcher?.(event);
    if (matcher !== undefined) lines.push(`matcher = ${value(matcher)}`);
    lines.push(`[[hooks.${key}.hooks]]`);
    for (const [k, v] of Object.entries(handler)) lines.push(`${k} = ${value(v)}`);
  }
  lines.push(END);
  return `${lines.join("\n")}\n`;
}

/** Where our block sits in the text: [start, end) including its final newline, if any; null when absent. */
function findBlock(path: string, text: string): [number, number] | null {
  const begin = text.indexOf(`${BEGIN}\n`);
  if (begin < 0 || (begin > 0 && text[begin - 1] !== "\n")) return null;
  const endAt = text.indexOf(`${END}`, begin);
  if (endAt < 0)
    throw new ExitError(
      1,
      `${path}: the tacho hooks block has no end line (${END}); restore it or remove the block, then run the command again (the file was left untouched)`,
    );
  const after = text.indexOf("\n", endAt);
  return [begin, after < 0 ? text.length : after + 1];
}

/**
 * The file's text with our block replaced (in place), appended, or removed (entries null). The
 * result must parse: a user's file that already defines hooks in a way our block cannot extend
 * (an inline `hooks = {...}` table, a static `PreToolUse = [...]` array) is refused, untouched.
 */
export function withBlock(path: string, text: string, adapter: HarnessAdapter, entries: HookEntries | null): string {
  const at = findBlock(path, text);
  let next: string;
  // A block at the very end of the file keeps the file's own ending: written after a text with no
  // final newline, it has none either, which is how removing it knows to give that text back.
  if (at) {
    const atEnd = at[1] === text.length;
    const bare = atEnd && !text.endsWith("\n");
    if (entries) {
      const block = renderBlock(adapter, entries);
      next = text.slice(0, at[0]) + (bare ? block.slice(0, -1) : block) + text.slice(at[1]);
    } else {
      // Also take the blank line (or, after a text that had no final newline, both newlines) we put before it.
      const sep = at[0] === 0 ? 0 : bare ? 2 : text.slice(at[0] - 2, at[0]) === "\n\n" ? 1 : 0;
      next = text.slice(0, at[0] - sep) + text.slice(at[1]);
    }
  } else if (entries) {
    const block = renderBlock(adapter, entries);
    if (text === "") next = block;
    else if (text.endsWith("\n")) next = `${text}\n${block}`;
    else next = `${text}\n\n${block.slice(0, -1)}`;
  } else next = text;
  if (next !== text && entries) {
    try {
      parse(next);
    } catch (err) {
      throw new ExitError(
        1,
        `${path} already defines hooks in a way tacho's entries would conflict with (${(err as Error).message.split("\n")[0]}); write its hooks as [[hooks.<Event>]] tables (or move them to a hooks file), then run the command again (the file was left untouched)`,
      );
    }
  }
  return next;
}

/** The text without the block between `begin` and `end` (and the blank line put before an appended one). */
export function cutBlock(text: string, begin: string, end: string): string {
  const at = text.indexOf(`${begin}\n`);
  if (at < 0) return text;
  const stop = text.indexOf(end, at);
  if (stop < 0 || (text[stop + end.length] !== "\n" && stop + end.length !== text.length))
    throw new ExitError(
      1,
      `the tacho gateway block has no end line (${end}); restore it or remove the block (the file was left untouched)`,
    );
  let from = at;
  const bare = stop + end.length === text.length;
  const to = bare ? text.length : stop + end.length + 1;
  // The blank line put before an appended block goes with it (both newlines after a text that had no final newline).
  if (to === text.length && from >= 2 && text.slice(from - 2, from) === "\n\n") from -= bare ? 2 : 1;
  return text.slice(0, from) + text.slice(to);
}
