import { EXIT_HELP, runAction } from "../../lib/operator.ts";

export const USAGE = `usage: oxagen resume RUN [--json]

Resumes a paused run (POST /v1/runs/RUN/resume): its computer lets its tool calls and prompts go
on again, and the command returns once the computer's recorder applied it (or says which did not).
A sealed run cannot be resumed.

  --json   print the API's answer

${EXIT_HELP}`;

/** `oxagen resume RUN`. */
export const resume = (args: string[]) => runAction("resume", args, USAGE);
