import { EXIT_HELP, runAction } from "../../lib/operator.ts";

export const USAGE = `usage: oxagen pause RUN [--json]

Pauses a run (POST /v1/runs/RUN/pause): its computer refuses the run's next tool call and prompt,
and the command returns once the computer's recorder applied it (or says which did not). oxagen
resume lets it go on.

  --json   print the API's answer

${EXIT_HELP}`;

/** `oxagen pause RUN`. */
export const pause = (args: string[]) => runAction("pause", args, USAGE);
