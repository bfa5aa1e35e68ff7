import type { FoyaClient } from "@foya/client";
import type { CliContext } from "../cli-context.js";
import type { CliConfig } from "../config-file.js";
import type { Output } from "../output.js";

/** One option of a command, as `node:util` parseArgs takes it, plus what help shows. */
export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  /** The value's placeholder in help: `--session ID`. */
  valueName?: string;
  description: string;
}

/** A positional argument; required ones come first. */
export interface ArgumentSpec {
  name: string;
  optional?: boolean;
}

/** The stored configuration, read on demand and updated in place (mode 0600). */
export interface ConfigStore {
  readonly path: string;
  read(): Promise<CliConfig>;
  /** Merges `changes` (a key set to undefined is removed) and answers the result. */
  update(changes: Partial<CliConfig>): Promise<CliConfig>;
}

/** What a command receives; `--json` and `--help` were handled before. */
export interface CommandInput {
  options: Readonly<Record<string, string | boolean | undefined>>;
  /** As many as the command's `arguments` allow, checked before it runs. */
  positionals: readonly string[];
  output: Output;
  context: CliContext;
  config: ConfigStore;
  /** A client for the configured API; throws CliError(not_logged_in) when no URL or key is set. */
  client(): Promise<FoyaClient>;
}

export interface Command {
  /** One or two words: `run`, `session new`. */
  name: string;
  summary: string;
  /** Lines of help after the usage and summary. */
  details?: string[];
  arguments: ArgumentSpec[];
  options: Record<string, OptionSpec>;
  /** Answers the exit code (exit-codes.ts); failures throw and are mapped in one place. */
  run(input: CommandInput): Promise<number>;
}
