import { parseArgs } from "node:util";
import type { CliContext } from "./cli-context.js";
import { UsageError } from "./cli-errors.js";
import type { Command, CommandInput, ConfigStore } from "./commands/command.js";
import { commands } from "./commands/command-list.js";
import { configPath, readConfig, writeConfig, type CliConfig } from "./config-file.js";
import { connect, resolveConnection } from "./connection.js";
import { exitCodes } from "./exit-codes.js";
import { commandHelp, generalHelp } from "./help.js";
import { createOutput } from "./output.js";
import { reportError } from "./report-error.js";

/** Runs one command line (without `node` and the script) and answers the exit code; never throws. */
export async function runCli(argv: readonly string[], context: CliContext): Promise<number> {
  const json = argv.includes("--json");
  const [first] = argv;
  if (first === undefined || first === "help" || first === "--help" || first === "-h") {
    (first === undefined ? context.stderr : context.stdout).write(`${generalHelp(commands)}\n`);
    return first === undefined ? exitCodes.usage : exitCodes.ok;
  }
  let command: Command | undefined;
  try {
    command = findCommand(argv);
    const rest = argv.slice(command.name.split(" ").length);
    const parsed = parseArgs({
      args: [...rest],
      options: { ...command.options, json: { type: "boolean" }, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
    if (parsed.values.help) {
      context.stdout.write(`${commandHelp(command)}\n`);
      return exitCodes.ok;
    }
    checkArguments(command, parsed.positionals);
    const config = configStore(configPath(context.env));
    const input: CommandInput = {
      options: parsed.values,
      positionals: parsed.positionals,
      output: createOutput(context, json),
      context,
      config,
      client: async () => connect(resolveConnection(context.env, await config.read())),
    };
    return await command.run(input);
  } catch (error) {
    return reportError(error, context, { json, ...(command ? { command: command.name } : {}) });
  }
}

/** A command of two words (`session new`) or one; the words are matched before any option. */
function findCommand(argv: readonly string[]): Command {
  const [first = "", second = ""] = argv;
  const found = commands.find((command) => command.name === `${first} ${second}`) ?? commands.find((command) => command.name === first);
  if (found) return found;
  const group = commands.filter((command) => command.name.startsWith(`${first} `));
  if (group.length > 0) throw new UsageError(`${first} needs one of: ${group.map((command) => command.name.split(" ")[1]).join(", ")}`);
  throw new UsageError(`unknown command ${JSON.stringify(first)}`);
}

function checkArguments(command: Command, positionals: readonly string[]): void {
  const required = command.arguments.filter((argument) => !argument.optional);
  if (positionals.length < required.length)
    throw new UsageError(
      `missing ${required
        .slice(positionals.length)
        .map((argument) => argument.name)
        .join(" ")}`,
    );
  if (positionals.length > command.arguments.length)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[command.arguments.length])}`);
}

function configStore(file: string): ConfigStore {
  return {
    path: file,
    read: () => readConfig(file),
    async update(changes) {
      const merged: CliConfig = { ...(await readConfig(file)), ...changes };
      for (const key of Object.keys(merged) as Array<keyof CliConfig>) if (merged[key] === undefined) delete merged[key];
      await writeConfig(file, merged);
      return merged;
    },
  };
}
