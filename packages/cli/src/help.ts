import type { Command } from "./commands/command.js";

/** `foya --help`: the commands, the shared options, the environment and the exit codes. */
export function generalHelp(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((command) => command.name.length)) + 2;
  return [
    "foya: a command line for the Foya API",
    "",
    "Usage: foya <command> [arguments] [options]",
    "",
    "Commands:",
    ...commands.map((command) => `  ${command.name.padEnd(width)}${command.summary}`),
    "",
    "Options of every command:",
    "  --json      machine output: one JSON document, or one JSON value per line for streams",
    "  -h, --help  help for the command",
    "",
    "Environment: FOYA_URL and FOYA_API_KEY (win over `foya login`), FOYA_CONFIG_DIR, NO_COLOR.",
    "Exit codes: 0 ok, 1 API or connection error, 2 bad usage, 3 a followed run did not complete, 4 not found.",
    "",
    "`foya <command> --help` tells more.",
  ].join("\n");
}

/** `foya <command> --help`. */
export function commandHelp(command: Command): string {
  const args = command.arguments.map((argument) => (argument.optional ? `[${argument.name}]` : argument.name));
  const options = Object.entries(command.options).map(([name, spec]) => {
    const flag = `${spec.short ? `-${spec.short}, ` : ""}--${name}${spec.valueName ? ` ${spec.valueName}` : ""}`;
    return [flag, spec.description] as const;
  });
  options.push(["--json", "machine output"], ["-h, --help", "this help"]);
  const width = Math.max(...options.map(([flag]) => flag.length)) + 2;
  return [
    `Usage: foya ${[command.name, ...args].join(" ")} [options]`,
    "",
    command.summary,
    ...(command.details?.length ? ["", ...command.details] : []),
    "",
    "Options:",
    ...options.map(([flag, description]) => `  ${flag.padEnd(width)}${description}`),
  ].join("\n");
}
