import { parse } from "../../lib/args.ts";
import { EXIT, EXIT_HELP, operatorApi, printJson, propagationText } from "../../lib/operator.ts";
import { runArg } from "../run/index.ts";

export const USAGE = `usage: oxagen pause RUN [--json]
       oxagen resume RUN [--json]

Pauses a run (POST /v1/runs/RUN/pause): its computer refuses the run's next tool call and prompt,
and the command returns once the computer's recorder applied it (or says which did not). resume
lets it go on; a sealed run cannot be resumed.

  --json   print the API's answer

${EXIT_HELP}`;

async function runAction(action: "pause" | "resume" | "seal", args: string[], usage: string): Promise<number> {
  const program = `oxagen ${action}`;
  const { values, positionals } = parse(program, args, { json: { type: "boolean", default: false } });
  const id = runArg(program, positionals, usage);
  const answer = await operatorApi(program).json<{ propagation?: Parameters<typeof propagationText>[0] }>(`/v1/runs/${id}/${action}`, {
    method: "POST",
    body: {},
  });
  if (values.json) printJson(answer);
  else
    process.stdout.write(
      `${action === "pause" ? "paused" : action === "resume" ? "resumed" : "sealed"} ${id}: ${propagationText(answer.propagation)}`,
    );
  return EXIT.ok;
}

/** `oxagen pause RUN`. */
export const pause = (args: string[]) => runAction("pause", args, USAGE);
/** `oxagen resume RUN`. */
export const resume = (args: string[]) => runAction("resume", args, USAGE);
/** `oxagen seal RUN` (its own help: collector/commands/seal). */
export const seal = (args: string[], usage: string) => runAction("seal", args, usage);
