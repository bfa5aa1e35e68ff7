/** A stream the CLI writes to; `isTTY` decides colours and live progress lines. */
export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * Everything a command receives from the process: main.ts is the only reader of `process`,
 * so commands run the same under tests and could run in-process.
 */
export interface CliContext {
  /** The environment (FOYA_URL, FOYA_API_KEY, FOYA_CONFIG_DIR, NO_COLOR, HOME, XDG_CONFIG_HOME). */
  env: Readonly<Record<string, string | undefined>>;
  stdout: OutputStream;
  stderr: OutputStream;
  /** Aborted by Ctrl-C: long-running commands (follow, event tails) stop with it. */
  signal: AbortSignal;
}
