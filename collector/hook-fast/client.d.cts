/** The collector's state directory (the same rule as collector/lib/state.ts). */
export declare function stateDir(): string;
/** Runs `tacho hook`: prints exactly one JSON answer on stdout and leaves the exit code 0. */
export declare function runHook(argv: string[]): Promise<void>;
