import type { Config } from "../config.js";
import { systemSearchPath } from "./find-executable.js";
import { createSandbox, systemReadOnlyPaths, type SandboxRunner } from "./sandbox-runner.js";
import { findServiceDir } from "./service-dir.js";

/**
 * The sandbox runner the composition root builds. Hidden as the service's own
 * files: the directory the code was installed in, and the process's working
 * directory (where .env files and the default `.data` usually are), unless
 * the service was started from "/" or a system tree, which cannot be hidden.
 */
export function sandboxFromConfig(config: Pick<Config, "sandbox" | "workspaces">, cwd: string = process.cwd()): SandboxRunner {
  const holdsSystemTree = systemReadOnlyPaths.some((system) => cwd === "/" || system === cwd || system.startsWith(`${cwd}/`));
  return createSandbox({
    bwrapPath: config.sandbox.bwrapPath,
    slirp4netnsPath: config.sandbox.slirp4netnsPath,
    // The sandbox's programs come from the system's folders, not from the tool PATH (see systemSearchPath).
    searchPath: systemSearchPath,
    workspacesDir: config.workspaces.dir,
    servicePaths: [findServiceDir(), ...(holdsSystemTree ? [] : [cwd])],
    hiddenPaths: config.sandbox.hiddenPaths,
    readOnlyPaths: config.sandbox.readOnlyPaths,
    gitSearchFolders: config.sandbox.gitSearchFolders,
  });
}
