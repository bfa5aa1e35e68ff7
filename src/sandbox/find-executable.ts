import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import path from "node:path";

/**
 * Answers the absolute path of an executable: `name` itself when it holds a
 * slash, else the first match on `searchPath` (a PATH string). Undefined when
 * there is none. Checked on every use, so installing it needs no restart.
 */
export async function findExecutable(name: string, searchPath: string): Promise<string | undefined> {
  const candidates = name.includes("/") ? [path.resolve(name)] : searchPath.split(":").filter((dir) => path.isAbsolute(dir)).map((dir) => path.join(dir, name));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      if ((await stat(candidate)).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
