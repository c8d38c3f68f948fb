import { ExitError } from "./lib/errors.ts";

type Command = (args: string[]) => Promise<number>;
/** A command's module: what runs it, and its help (`usage`, printed for --help). */
interface CommandModule {
  run: Command;
  usage: string;
}

/** Loads a command's module lazily: `tacho hook` and `oxagen verify` load nothing they do not use. */
async function command<M extends { USAGE: string }>(module: Promise<M>, run: (m: M) => Command): Promise<CommandModule> {
  const m = await module;
  return { run: run(m), usage: m.USAGE };
}

const COMMANDS: Record<string, Record<string, { summary: string; load: () => Promise<CommandModule> }>> = {
  oxagen: {
    verify: { summary: "check an export bundle offline", load: () => command(import("./commands/verify/index.ts"), (m) => m.verify) },
    agent: {
      summary: "enroll this computer for custom agents; rebuild a session from its transcript",
      load: () => command(import("./commands/agent/index.ts"), (m) => m.agent),
    },
    login: {
      summary: "sign this command line in to a server (a code approved in the console, or a token)",
      load: () => command(import("./commands/login/index.ts"), (m) => m.login),
    },
    logout: {
      summary: "sign out; revoke the token login minted",
      load: () => command(import("./commands/logout/index.ts"), (m) => m.logout),
    },
    runs: {
      summary: "the workspace's runs, with the API's filters",
      load: () => command(import("./commands/runs/index.ts"), (m) => m.runs),
    },
    run: {
      summary: "one run: status, outcome, tier, grade, gaps, spend, coverage",
      load: () => command(import("./commands/run/index.ts"), (m) => m.run),
    },
    export: {
      summary: "download a run's bundle (and its bodies) and verify it",
      load: () => command(import("./commands/export/index.ts"), (m) => m.exportRun),
    },
    pause: { summary: "pause a run", load: () => command(import("./commands/pause/index.ts"), (m) => m.pause) },
    resume: { summary: "resume a paused run", load: () => command(import("./commands/resume/index.ts"), (m) => m.resume) },
    seal: {
      summary: "seal a run: lock its record with the server's key and stop its agent",
      load: () => command(import("./commands/seal/index.ts"), (m) => m.seal),
    },
    agents: {
      summary: "wrapped agents and their health; pause, resume or register one",
      load: () => command(import("./commands/agents/index.ts"), (m) => m.agents),
    },
    computers: {
      summary: "the workspace's enrolled computers",
      load: () => command(import("./commands/computers/index.ts"), (m) => m.computers),
    },
    tokens: {
      summary: "the workspace's operator (or enrollment) tokens",
      load: () => command(import("./commands/tokens/index.ts"), (m) => m.tokens),
    },
  },
  tacho: {
    enroll: {
      summary: "enroll this computer and wrap harnesses (Claude Code, Codex, Cursor, Stella)",
      load: () => command(import("./commands/enroll/index.ts"), (m) => m.enroll),
    },
    status: {
      summary: "the enrollment, each harness's hooks, the recorder, what is pending",
      load: () => command(import("./commands/status/index.ts"), (m) => m.status),
    },
    hook: {
      summary: "one step of a run: a JSON payload on stdin, one JSON answer on stdout",
      load: () => command(import("./commands/hook/index.ts"), (m) => m.hook),
    },
    daemon: { summary: "start, stop or install the recorder", load: () => command(import("./commands/daemon/index.ts"), (m) => m.daemon) },
    reassign: {
      summary: "change the wrapped harnesses or the workspace",
      load: () => command(import("./commands/reassign/index.ts"), (m) => m.reassign),
    },
    "rotate-key": {
      summary: "give this computer a new host key (the recorder must be stopped)",
      load: () => command(import("./commands/rotate-key/index.ts"), (m) => m.rotateKey),
    },
    open: {
      summary: "open this computer's workspace, or a run, in the Oxagen console",
      load: () => command(import("./commands/open/index.ts"), (m) => m.open),
    },
    unenroll: {
      summary: "remove this computer from its workspace and delete its enrollment",
      load: () => command(import("./commands/unenroll/index.ts"), (m) => m.unenroll),
    },
  },
};

const HELP = new Set(["--help", "-h", "help"]);

function usage(program: string): string {
  const table = COMMANDS[program] ?? {};
  const width = Math.max(0, ...Object.keys(table).map((n) => n.length));
  const lines = Object.entries(table).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: ${program} <command> [options]\n\ncommands:\n${lines.join("\n")}\n\n${program} <command> --help describes one command.`;
}

/** Runs one command line; returns the exit code. The only place errors become exit codes. */
export async function main(program: string, argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const table = COMMANDS[program] ?? {};
  if (!name || HELP.has(name)) {
    process.stdout.write(`${usage(program)}\n`);
    return name ? 0 : 2;
  }
  const entry = table[name];
  if (!entry) {
    process.stderr.write(`${program}: unknown command "${name}"\n${usage(program)}\n`);
    return 2;
  }
  try {
    const command = await entry.load();
    if (rest.includes("--help") || rest.includes("-h")) {
      process.stdout.write(`${command.usage}\n`);
      return 0;
    }
    return await command.run(rest);
  } catch (err) {
    if (err instanceof ExitError) {
      process.stderr.write(`${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`${program} ${name}: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return 70;
  }
}
