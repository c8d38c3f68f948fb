// The README's commands and their help agree (issue 22 item 5): every `tacho …` / `oxagen …` command
// the README gives, in its command table or its code lines, has a `--help` that is a real help (more
// than a usage line) and names every flag the README gives it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { OXAGEN, run, TACHO, tempHome } from "./support/tacho.ts";

const README = readFileSync(join(import.meta.dirname, "../../README.md"), "utf8");
const BIN: Record<string, string> = { tacho: TACHO, oxagen: OXAGEN };

/** `program command` → the flags the README gives it, from each line that starts with the command. */
function readmeCommands(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const lines = README.split("\n").flatMap((line) => {
    // A command-table row: its command cell and, for the flags its description names in backticks, the row.
    const cell = /^\|\s*`((?:tacho|oxagen) [^`]+)`/.exec(line);
    if (cell) return [{ command: cell[1]!, flagsFrom: line }];
    const code = /^\s*(?:npx )?((?:tacho|oxagen) [a-z-]+.*)$/.exec(line);
    return code ? [{ command: code[1]!, flagsFrom: code[1]! }] : [];
  });
  for (const { command, flagsFrom } of lines) {
    const [program, name] = command.split(/\s+/);
    if (!name || name.startsWith("-")) continue;
    const key = `${program} ${name}`;
    const flags = out.get(key) ?? new Set<string>();
    for (const m of flagsFrom.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)) if (m[0] !== "--help") flags.add(m[0]);
    out.set(key, flags);
  }
  return out;
}

describe("README commands and their --help", () => {
  const commands = readmeCommands();
  it("the README gives the commands this test checks", () => {
    expect([...commands.keys()]).toEqual(expect.arrayContaining(["tacho enroll", "tacho unenroll", "tacho rotate-key", "oxagen verify"]));
  });
  const home = tempHome();
  for (const [command, flags] of commands) {
    it(`${command} --help is a real help naming ${[...flags].join(" ") || "no flag"}`, async () => {
      const [program, name] = command.split(" ");
      const r = await run(BIN[program!]!, [name!, "--help"], { env: home.env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim().split("\n").length, r.stdout).toBeGreaterThan(3);
      for (const flag of flags) expect(r.stdout, `${command} --help should name ${flag}`).toMatch(new RegExp(`${flag}(?![a-z-])`));
    });
  }
});
