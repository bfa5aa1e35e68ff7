import { execa } from "execa";
import { entryArgs, spawnNodeProcess, type SpawnedProcess } from "../helpers/processes.js";
import { repoRoot } from "../helpers/test-env.js";

/**
 * The CLI from its TypeScript sources, as `npm run foya` runs it (@foya/client resolved to its
 * src/ too), compiled once per run with the other entries (test/helpers/entry-build.ts).
 */
const cliArgs = (): string[] => entryArgs("packages/cli/src/main.ts");

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Where a CLI process sends requests and keeps its configuration; an empty value is as good as unset. */
export interface CliEnv {
  FOYA_URL?: string;
  FOYA_API_KEY?: string;
  FOYA_CONFIG_DIR: string;
}

function environment(env: CliEnv): Record<string, string> {
  // Set every variable the CLI reads, so nothing of the test runner's own environment leaks in.
  return { FOYA_URL: "", FOYA_API_KEY: "", NO_COLOR: "", ...env };
}

/** Runs `foya <args>` as a child process to its end. */
export async function foya(env: CliEnv, ...args: string[]): Promise<CliResult> {
  const result = await execa(process.execPath, [...cliArgs(), ...args], {
    cwd: repoRoot,
    env: environment(env),
    reject: false,
    stdin: "ignore",
    stripFinalNewline: false,
  });
  return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

/** Starts `foya <args>` and leaves it running (stdout and stderr interleaved in `output()`). */
export function spawnFoya(env: CliEnv, ...args: string[]): SpawnedProcess {
  return spawnNodeProcess([...cliArgs(), ...args], environment(env), "foya");
}

/** Each line of stdout parsed as JSON (JSON lines). */
export function jsonLines(stdout: string): unknown[] {
  return stdout
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .map((line) => JSON.parse(line) as unknown);
}
