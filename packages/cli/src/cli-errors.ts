/** The command line is wrong (exit 2); the message says what, the command's help says how. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  readonly code = "usage";
}

/** Something the CLI itself cannot do (exit 1), such as a missing URL or key; `code` is stable. */
export class CliError extends Error {
  override readonly name = "CliError";
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}
