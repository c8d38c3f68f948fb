import { UsageError } from "../../lib/errors.ts";
import { enrollWith } from "../enroll/index.ts";

const USAGE =
  "usage: oxagen agent enroll --server URL --token TOKEN [--harness LIST] [--json]\n       oxagen agent backfill TRANSCRIPT [--json]";

/** `oxagen agent <subcommand>`. */
export async function agent(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "enroll") return enrollWith({ program: "oxagen agent enroll", args: rest, harnessRequired: false });
  if (sub === "backfill") return (await import("./backfill.ts")).backfill(rest);
  throw new UsageError(sub ? `oxagen agent: unknown subcommand "${sub}"\n${USAGE}` : USAGE);
}
