import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import type { CliContext } from "./cli-context.js";
import { CliError } from "./cli-errors.js";

/**
 * What `foya login` stores. The key is a secret, hence mode 0600. `projectId` is the project
 * `session new` made for the CLI (the API cannot list projects), `sessionId` the session it
 * made last, which `run` uses when no `--session` is given; both belong to `url` and the key.
 */
export interface CliConfig {
  url?: string;
  apiKey?: string;
  projectId?: string;
  sessionId?: string;
}

/** `$FOYA_CONFIG_DIR/config.json`, else `$XDG_CONFIG_HOME/foya/config.json`, else `~/.config/foya/config.json`. */
export function configPath(env: CliContext["env"]): string {
  if (env.FOYA_CONFIG_DIR) return path.join(env.FOYA_CONFIG_DIR, "config.json");
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || homedir(), ".config");
  return path.join(base, "foya", "config.json");
}

/** The stored configuration; none yet is an empty one. */
export async function readConfig(file: string): Promise<CliConfig> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw error;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not an object");
    const config: CliConfig = {};
    for (const key of ["url", "apiKey", "projectId", "sessionId"] as const) {
      const value = (parsed as Record<string, unknown>)[key];
      if (typeof value === "string") config[key] = value;
    }
    return config;
  } catch (error) {
    throw new CliError("bad_config", `${file} is not a valid configuration (${(error as Error).message}): run foya login again`);
  }
}

/**
 * Replaces the configuration in one step (a temporary file renamed over it), readable by its
 * owner only: the file is created 0600 and chmod'ed again, since a mode applies only to new files.
 */
export async function writeConfig(file: string, config: CliConfig): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600);
  await rename(temporary, file);
}
