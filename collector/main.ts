import { ExitError } from "./lib/errors.ts";

type Command = (args: string[]) => Promise<number>;

const COMMANDS: Record<string, Record<string, () => Promise<Command>>> = {
  oxagen: {
    verify: async () => (await import("./commands/verify/index.ts")).verify,
    agent: async () => (await import("./commands/agent/index.ts")).agent,
  },
  tacho: {
    daemon: async () => (await import("./commands/daemon/index.ts")).daemon,
    hook: async () => (await import("./commands/hook/index.ts")).hook,
    enroll: async () => (await import("./commands/enroll/index.ts")).enroll,
    reassign: async () => (await import("./commands/reassign/index.ts")).reassign,
    status: async () => (await import("./commands/status/index.ts")).status,
    "rotate-key": async () => (await import("./commands/rotate-key/index.ts")).rotateKey,
    unenroll: async () => (await import("./commands/unenroll/index.ts")).unenroll,
  },
};

function usage(program: string): string {
  const names = Object.keys(COMMANDS[program] ?? {});
  return `usage: ${program} <command> [options]\ncommands: ${names.join(", ") || "(none yet)"}`;
}

/** Runs one command line; returns the exit code. The only place errors become exit codes. */
export async function main(program: string, argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const table = COMMANDS[program] ?? {};
  if (!name || name === "--help" || name === "-h") {
    process.stdout.write(`${usage(program)}\n`);
    return name ? 0 : 2;
  }
  const load = table[name];
  if (!load) {
    process.stderr.write(`${program}: unknown command "${name}"\n${usage(program)}\n`);
    return 2;
  }
  try {
    return await (await load())(rest);
  } catch (err) {
    if (err instanceof ExitError) {
      process.stderr.write(`${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`${program} ${name}: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return 70;
  }
}
