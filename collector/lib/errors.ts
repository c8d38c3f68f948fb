/** An expected failure: the message is for the user, the code is the process's exit code. */
export class ExitError extends Error {
  readonly exitCode: number;
  constructor(exitCode: number, message: string) {
    super(message);
    this.name = "ExitError";
    this.exitCode = exitCode;
  }
}

/** Bad command-line arguments (exit 2). */
export class UsageError extends ExitError {
  constructor(message: string) {
    super(2, message);
    this.name = "UsageError";
  }
}
