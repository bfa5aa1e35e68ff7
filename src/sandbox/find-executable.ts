import { accessSync, constants, statSync } from "node:fs";
import path from "node:path";

/**
 * Answers the absolute path of an executable: `name` itself when it holds a
 * slash, else the first match on `searchPath` (a PATH string). Undefined when
 * there is none. Checked on every use, so installing it needs no restart.
 */
export function findExecutable(name: string, searchPath: string): string | undefined {
  const candidates = name.includes("/") ? [path.resolve(name)] : searchPath.split(":").filter((dir) => path.isAbsolute(dir)).map((dir) => path.join(dir, name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
