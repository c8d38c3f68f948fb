import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError } from "./errors.ts";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** parseArgs with strict checking, turning its errors into a UsageError that names the command. */
export function parse<O extends Options>(command: string, args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${command}: ${(err as Error).message}`);
  }
}
