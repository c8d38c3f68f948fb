import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, isAbsolute } from "node:path";
import { RunId } from "../../../protocol/index.ts";
import { parse } from "../../lib/args.ts";
import { openBrowser } from "../../lib/browser.ts";
import { ExitError, UsageError } from "../../lib/errors.ts";
import { readHost, statePath } from "../../lib/state.ts";

export const USAGE = `usage: tacho open [--run [RUN_ID]] [--print]

Opens this computer's workspace in the Oxagen console, in the browser: the console is served by the
server this computer enrolled with, at <server>/console. With --run, the run of the most recent
session recorded in the current directory (or below it), or the run RUN_ID. When no browser can be
opened (no display, or --print), it prints the address instead.`;

/** How many of the most recently written chains are searched for a session in the current directory. */
const SEARCHED_CHAINS = 200;

export async function open(args: string[]): Promise<number> {
  const { values, positionals } = parse("tacho open", args, {
    run: { type: "boolean", default: false },
    print: { type: "boolean", default: false },
  });
  if (positionals.length > (values.run ? 1 : 0)) throw new UsageError(USAGE);
  const host = readHost();
  if (!host) throw new ExitError(1, "tacho open: this computer is not enrolled; run tacho enroll first");
  let path = "/console";
  if (values.run) {
    const given = positionals[0];
    if (given !== undefined && !RunId.safeParse(given).success)
      throw new UsageError(`tacho open: ${given} is not a run id (run_ and 32 hex)`);
    const found = given === undefined ? sessionRunIn(process.cwd()) : { run: given, unknown: 0 };
    if (!found.run) {
      const runs = new URL(`/console/runs?host=${encodeURIComponent(host.host_id)}`, host.server).toString();
      // A chain whose start was shipped and compacted out of the journal no longer says where it ran.
      const why =
        found.unknown > 0
          ? `no session whose start is still in this computer's journal ran in ${process.cwd()} (${found.unknown} older session${found.unknown === 1 ? "'s start was" : "s' starts were"} shipped and compacted away, so where they ran is not known here)`
          : `no session recorded on this computer ran in ${process.cwd()}`;
      throw new ExitError(1, `tacho open: ${why}; name a run: tacho open --run RUN_ID, or find it among this computer's runs: ${runs}`);
    }
    path = `/console/runs/${found.run}`;
  }
  const url = new URL(path, host.server).toString();
  const opened = !values.print && (await openBrowser(url));
  process.stdout.write(opened ? `opened ${url}\n` : `${url}\n`);
  return 0;
}

/**
 * The run of the most recent session whose first frame says it started in `dir` or below it, from
 * the recorder's journal (the chains written last first). A chain whose agent_start was already
 * shipped and compacted away cannot say where it ran: `unknown` counts those searched.
 */
export function sessionRunIn(dir: string): { run: string | null; unknown: number } {
  const journal = statePath("journal");
  if (!existsSync(journal)) return { run: null, unknown: 0 };
  const chains = readdirSync(journal)
    .filter((n) => /^run_[0-9a-f]{32}\.jsonl$/.test(n))
    .map((n) => ({ n, at: statSync(join(journal, n)).mtimeMs }))
    .sort((a, b) => b.at - a.at)
    .slice(0, SEARCHED_CHAINS);
  const here = resolve(dir);
  let unknown = 0;
  for (const { n } of chains) {
    const text = readFileSync(join(journal, n), "utf8");
    const cwd = startCwd(text);
    if (cwd === null) {
      if (text.startsWith('{"k":"snap"')) unknown++;
    } else if (within(here, cwd)) return { run: n.slice(0, -".jsonl".length), unknown };
  }
  return { run: null, unknown };
}

function startCwd(text: string): string | null {
  for (const line of text.split("\n")) {
    if (!line.includes('"agent_start"')) continue;
    try {
      const entry = JSON.parse(line) as { frames?: { kind?: string; payload?: string }[] };
      for (const f of entry.frames ?? []) {
        if (f.kind !== "agent_start" || typeof f.payload !== "string") continue;
        const cwd = (JSON.parse(f.payload) as { cwd?: unknown }).cwd;
        if (typeof cwd === "string" && cwd.length > 0) return cwd;
      }
    } catch {
      // A torn or foreign line: the recorder cuts it off on its next start.
    }
  }
  return null;
}

// Whether the session's directory is `dir` or inside it.
function within(dir: string, sessionDir: string): boolean {
  const rel = relative(dir, resolve(sessionDir));
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}
