import { readFileSync } from "node:fs";
import { processStart } from "../lib/harness-pid.js";

/** A session's harness process: its pid and start time (null when unknown). */
export interface HarnessProc {
  pid: number;
  start: string | null;
}

function alive(p: HarnessProc): boolean {
  try {
    process.kill(p.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  // Same pid, another start time: the harness exited and the pid was reused.
  if (p.start !== null && process.platform === "linux") return processStart(p.pid) === p.start;
  return true;
}

/**
 * The harness process of each session that reported one (Stella's hooks do), kept on disk so a
 * restarted recorder still ends the session when the process goes.
 */
export class HarnessProcesses {
  readonly #byChain = new Map<string, HarnessProc>();
  readonly #save: (text: string) => void;

  constructor(file: string | null, save: (text: string) => void) {
    this.#save = save;
    if (!file) return;
    try {
      const raw = JSON.parse(readFileSync(file, "utf8")) as Record<string, HarnessProc>;
      for (const [chain, p] of Object.entries(raw))
        if (Number.isInteger(p?.pid) && p.pid > 0) this.#byChain.set(chain, { pid: p.pid, start: p.start ?? null });
    } catch {
      // No file yet, or a damaged one: sessions seen from now on are tracked.
    }
  }

  note(chain: string, proc: HarnessProc): void {
    const had = this.#byChain.get(chain);
    if (had && had.pid === proc.pid && had.start === proc.start) return;
    this.#byChain.set(chain, proc);
    this.#persist();
  }

  forget(chain: string): void {
    if (this.#byChain.delete(chain)) this.#persist();
  }

  /** Sessions whose harness process is gone. */
  gone(): string[] {
    return [...this.#byChain].filter(([, p]) => !alive(p)).map(([chain]) => chain);
  }

  #persist(): void {
    this.#save(`${JSON.stringify(Object.fromEntries(this.#byChain))}\n`);
  }
}
