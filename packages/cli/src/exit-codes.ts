/**
 * What `foya` exits with; scripts branch on these, so they never change meaning.
 * A run that ends badly is only an exit code when the command followed it to its end.
 */
export const exitCodes = {
  ok: 0,
  /** The API refused (any status but 404), could not be reached, or no URL or key is set. */
  error: 1,
  /** The command line itself is wrong: unknown command or option, missing or malformed argument. */
  usage: 2,
  /** A followed run ended failed, cancelled or interrupted. */
  runNotCompleted: 3,
  /** The API answered 404: no such id for this key. */
  notFound: 4,
  /** Stopped with Ctrl-C (128 + SIGINT), as shells expect. */
  interrupted: 130,
} as const;

export type ExitCode = (typeof exitCodes)[keyof typeof exitCodes];
