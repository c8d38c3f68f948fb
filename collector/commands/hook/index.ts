import { runHook } from "../../hook-fast/client.cjs";

/** `tacho hook`: collector/bin/tacho.js runs the fast client directly; this entry serves main.ts callers. */
export async function hook(args: string[]): Promise<number> {
  await runHook(args);
  return 0;
}
