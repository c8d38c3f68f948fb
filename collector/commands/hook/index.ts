import { runHook } from "./client.cjs";

export const USAGE = `usage: tacho hook --agent NAME
       tacho hook --harness claude-code|codex|cursor|stella

Reads one hook payload (JSON) on stdin and prints one JSON answer on stdout; always exits 0.
--agent NAME      a custom agent (NAME matches ^[a-z0-9][a-z0-9._-]{0,63}$, not a built-in harness name)
--harness NAME    the command tacho enroll writes into a harness's own hook configuration
When the recorder is down it decides from the cached signed policy and spools the step.`;

/** `tacho hook`: collector/bin/tacho.js runs the fast client directly; this entry serves main.ts callers. */
export async function hook(args: string[]): Promise<number> {
  await runHook(args);
  return 0;
}
