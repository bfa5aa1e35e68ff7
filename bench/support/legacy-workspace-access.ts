import { chmod, lstat, mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import path from "node:path";
import { glob } from "tinyglobby";

/**
 * The workspace access the service had before the workspace door
 * (docs/decisions/0006-the-workspace-door.md), kept only as the
 * benchmark's baseline (bench/workspace-door-bench.ts): resolve a path by
 * real paths, then reopen it by name (the check-then-use race the workspace
 * door removed), and glob with tinyglobby. Not used by the service.
 */
async function resolveByName(workspaceDir: string, requested: string): Promise<string> {
  const root = await realpath(workspaceDir);
  const candidate = path.resolve(root, requested);
  let existing = candidate;
  const missing: string[] = [];
  for (;;) {
    try {
      await lstat(existing);
      break;
    } catch {
      missing.unshift(path.basename(existing));
      existing = path.dirname(existing);
    }
  }
  const real = path.join(await realpath(existing), ...missing);
  const relative = path.relative(root, real);
  if (relative.startsWith("..") || path.isAbsolute(relative)) throw new Error(`${requested} is outside the workspace`);
  return real;
}

export async function legacyRead(workspaceDir: string, requested: string): Promise<Buffer> {
  return readFile(await resolveByName(workspaceDir, requested));
}

/** Snapshot before, write, mode, snapshot after: what write did per call. */
export async function legacyWrite(workspaceDir: string, requested: string, content: Buffer): Promise<void> {
  const absolute = await resolveByName(workspaceDir, requested);
  const before = await lstat(absolute).then(
    async (stats) => ({ content: await readFile(absolute), mode: stats.mode & 0o7777 }),
    () => null,
  );
  await mkdir(path.dirname(absolute), { recursive: true });
  await writeFile(absolute, content);
  if (before) await chmod(absolute, before.mode);
  await readFile(absolute);
}

export async function legacyList(workspaceDir: string, pattern: string): Promise<string[]> {
  return glob(pattern, {
    cwd: workspaceDir,
    ignore: ["**/node_modules/**", "**/.git/**"],
    dot: true,
    onlyFiles: true,
    followSymbolicLinks: false,
    expandDirectories: false,
  });
}
