import { accessSync, constants, statSync } from "node:fs";
import path from "node:path";

/**
 * Answers the absolute path of an executable: `name` itself when it holds a
 * slash, else the first match on `searchPath` (a PATH string). Undefined when
 * there is none. Checked on every use, so installing it needs no restart.
 */
export function findExecutable(name: string, searchPath: string): string | undefined {
  const candidates = name.includes("/")
    ? [path.resolve(name)]
    : searchPath
        .split(":")
        .filter((dir) => path.isAbsolute(dir))
        .map((dir) => path.join(dir, name));
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

/**
 * Where the sandbox's own programs (bwrap, slirp4netns, unshare, setpriv,
 * prlimit) are looked up by name: the system's folders only, never the
 * service's PATH, which under `npm start` begins with node_modules/.bin
 * folders any installed package can put a program in. An operator who keeps
 * them elsewhere names them by absolute path (FOYA_BWRAP_PATH, ...).
 */
export const systemSearchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
