import { EXIT_HELP, runAction } from "../../lib/operator.ts";

export const USAGE = `usage: oxagen seal RUN [--json]

Seals a run (POST /v1/runs/RUN/seal): the server locks its record with its own key, naming any
hole and any frames held beyond it as gaps, and stops its agent through policy; frames that arrive
after the seal are refused and recorded as a gap. A sealed run can be exported at once and never
resumed.

  --json   print the API's answer (the sealed run and its propagation)

${EXIT_HELP}`;

export const seal = (args: string[]) => runAction("seal", args, USAGE);
