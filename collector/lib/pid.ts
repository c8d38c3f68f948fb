import { readFileSync } from "node:fs";
import { statePath } from "./state.ts";

/** The recorder's pid from recorder.pid, or null. */
export function readPid(): number | null {
  try {
    const pid = Number.parseInt(readFileSync(statePath("recorder.pid"), "utf8").trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** True when a process with this pid exists (EPERM means it exists but is not ours). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
