import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The directory Foya's running code was installed in: the nearest ancestor of
 * this module holding a package.json. That, not the current directory, is
 * what the sandbox hides as "the service's files": the code, node_modules,
 * and what usually sits beside them (.env, the default .data).
 */
export function findServiceDir(from: string = fileURLToPath(import.meta.url)): string {
  for (let dir = path.dirname(from); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}: cannot tell where the service is installed`);
  }
}
