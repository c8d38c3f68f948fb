import { ExitError } from "./errors.ts";
import { alive, readPid } from "./pid.ts";

/** Refuses to go on while the recorder runs: it holds the host key and the journal open. */
export function requireRecorderStopped(command: string, then: string): void {
  const pid = readPid();
  if (pid !== null && alive(pid))
    throw new ExitError(1, `${command}: the recorder is running (pid ${pid}); stop it with tacho daemon stop, ${then}`);
}
