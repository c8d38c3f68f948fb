/** The harness process a hook runs under: its pid and start time. */
export interface HarnessProcess {
  pid: number;
  start: string;
}
/** Walks the parent pids to the harness process (by name, else the first non-launcher). */
export declare function harnessProcess(name: string): Promise<HarnessProcess | null>;
/** A live process's start time (Linux /proc); null when gone or unknown. */
export declare function processStart(pid: number): string | null;
