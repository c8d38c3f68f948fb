import { UsageError } from "../../lib/errors.ts";
import { enrollWith } from "../enroll/index.ts";

export const USAGE = `usage: oxagen agent enroll --server URL [--token TOKEN] [--harness LIST] [options]
       oxagen agent backfill TRANSCRIPT [--json]

  enroll     the same as tacho enroll (see tacho enroll --help): enrolls this computer for custom agents
             (tacho hook --agent NAME), and wraps the harnesses in --harness LIST when given. --token is
             the one-time token an agent's registration issued (the console, or oxagen agents register
             NAME): the computer then wraps that agent. Without --token it signs in with a code an
             operator approves in the console
  backfill   rebuilds a finished Claude Code session from its transcript; every frame is marked backfilled`;

/** `oxagen agent <subcommand>`. */
export async function agent(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "enroll") return enrollWith({ program: "oxagen agent enroll", args: rest });
  if (sub === "backfill") return (await import("./backfill.ts")).backfill(rest);
  throw new UsageError(sub ? `oxagen agent: unknown subcommand "${sub}"\n${USAGE}` : USAGE);
}
