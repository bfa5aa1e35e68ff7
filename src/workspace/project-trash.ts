import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { lstat, mkdir, readdir, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";

/**
 * Each project's own trash (SPEC F4): `<workspaces>/.trash/<tenant>/<project>/Trash/{files,info}`,
 * root's, outside every workspace, never shared between projects or tenants.
 *
 * The `trash` package does the moving, in the XDG trash layout, as it always did; it has no
 * option for where the trash is (it reads the home folder and XDG_DATA_HOME once, when it is
 * loaded), so it runs in a short-lived child process whose HOME and XDG_DATA_HOME are the
 * project's trash folder: about 60 ms per removal, which is rare, against a process-wide
 * setting that every concurrent removal of every tenant would share.
 */

const trashFolderName = ".trash";

/** The trash folder of the project whose workspace is `workspacePath`. */
export function projectTrashRoot(workspacesDir: string, workspacePath: string): string {
  const relative = path.relative(workspacesDir, workspacePath);
  // A workspace outside the workspaces folder (moved, or made by an older layout) is named by its path's digest.
  const name =
    relative === "" || relative.startsWith("..") || path.isAbsolute(relative)
      ? ["by-path", createHash("sha256").update(workspacePath).digest("hex").slice(0, 32)]
      : relative.split(path.sep);
  return path.join(workspacesDir, trashFolderName, ...name);
}

const moveScript = `
const { default: trash } = await import(process.argv[1]);
const moved = await trash(process.argv.slice(2), { glob: false });
process.stdout.write(JSON.stringify(moved));
`;
const trashModule = import.meta.resolve("trash");

/** Moves host paths (never a tenant's) into the trash at `root`; answers where each went, with its info file. */
export async function moveIntoTrash(root: string, paths: readonly string[]): Promise<Array<{ path: string; info: string }>> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  const child = await execa(process.execPath, ["--input-type=module", "-e", moveScript, trashModule, ...paths], {
    env: { HOME: root, XDG_DATA_HOME: root, PATH: process.env.PATH ?? "/usr/bin:/bin", ...(process.env.TZ ? { TZ: process.env.TZ } : {}) },
    extendEnv: false,
    reject: false,
  });
  if (child.exitCode !== 0)
    throw new Error(`the trash refused: ${child.stderr.split("\n").find((line) => line.trim() !== "") ?? `exit ${child.exitCode}`}`);
  return JSON.parse(child.stdout) as Array<{ path: string; info: string }>;
}

/**
 * Moves one entry into the trash at `root` by rename, in the layout the trash package
 * writes (an info file naming where it was, then the entry under the same id): for the
 * apply of a layered call (SPEC X7), which removes entries on the workspaces' own file
 * system and cannot spend a child process on each. `from` may be a descriptor path
 * (`/proc/self/fd/<fd>/<name>`); `originalPath` is the host path it had. Answers the id.
 */
export function placeInTrash(root: string, from: string, originalPath: string): string {
  const { files, info } = folders(root);
  mkdirSync(files, { recursive: true, mode: 0o700 });
  mkdirSync(info, { recursive: true, mode: 0o700 });
  const id = randomUUID();
  const infoPath = path.join(info, `${id}.trashinfo`);
  const deletedAt = new Date().toISOString().replace(/\.\d{3}Z$/, "");
  writeFileSync(infoPath, `[Trash Info]\nPath=${encodeURI(originalPath)}\nDeletionDate=${deletedAt}\n`, { flag: "wx", mode: 0o600 });
  try {
    renameSync(from, path.join(files, id));
  } catch (error) {
    rmSync(infoPath, { force: true });
    throw error;
  }
  return id;
}

export interface TrashEntry {
  /** The entry's name in the trash, used to restore it. */
  id: string;
  /** Where it was, relative to the workspace. */
  path: string;
  kind: "file" | "folder" | "link" | "other";
  /** Bytes of a file; null for folders and links. */
  bytes: number | null;
  deletedAt: Date;
}

const folders = (root: string) => ({ files: path.join(root, "Trash", "files"), info: path.join(root, "Trash", "info") });
const idPattern = /^[0-9a-f-]{36}$/;

/** The project's trash, newest first. */
export async function listTrash(root: string, workspacePath: string): Promise<TrashEntry[]> {
  const { files, info } = folders(root);
  const names = await readdir(info).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return [];
    throw error;
  });
  const entries: TrashEntry[] = [];
  for (const name of names) {
    const id = name.replace(/\.trashinfo$/, "");
    if (!idPattern.test(id)) continue;
    const entry = await readEntry(files, info, id, workspacePath);
    if (entry) entries.push(entry);
  }
  return entries.sort((a, b) => b.deletedAt.getTime() - a.deletedAt.getTime() || a.id.localeCompare(b.id));
}

/** One entry, or undefined when there is none by that id (or it is half gone). */
export async function findTrashEntry(
  root: string,
  workspacePath: string,
  id: string,
): Promise<(TrashEntry & { hostPath: string; infoPath: string }) | undefined> {
  if (!idPattern.test(id)) return undefined;
  const { files, info } = folders(root);
  const entry = await readEntry(files, info, id, workspacePath);
  return entry && { ...entry, hostPath: path.join(files, id), infoPath: path.join(info, `${id}.trashinfo`) };
}

async function readEntry(files: string, info: string, id: string, workspacePath: string): Promise<TrashEntry | undefined> {
  const infoPath = path.join(info, `${id}.trashinfo`);
  const [text, infoStats, stats] = await Promise.all([
    readFile(infoPath, "utf8").catch(() => null),
    stat(infoPath).catch(() => null),
    lstat(path.join(files, id)).catch(() => null),
  ]);
  if (text === null || infoStats === null || stats === null) return undefined;
  const original = /^Path=(.*)$/m.exec(text)?.[1];
  let decoded: string;
  try {
    decoded = original === undefined ? "" : decodeURI(original);
  } catch {
    decoded = original ?? "";
  }
  const relative = path.relative(workspacePath, decoded);
  return {
    id,
    path: relative.startsWith("..") || path.isAbsolute(relative) ? decoded : relative,
    kind: stats.isFile() ? "file" : stats.isDirectory() ? "folder" : stats.isSymbolicLink() ? "link" : "other",
    bytes: stats.isFile() ? stats.size : null,
    // The info file is written when the entry is trashed: its time is the deletion's, in any time zone.
    deletedAt: infoStats.mtime,
  };
}

/** The record of an entry that was restored (its content is back in the workspace). */
export async function dropTrashRecord(entry: { infoPath: string }): Promise<void> {
  await rm(entry.infoPath, { force: true });
}

/** Removes an entry for good: its content first, then its record. */
async function removeTrashEntry(entry: { hostPath: string; infoPath: string }): Promise<void> {
  await rm(entry.hostPath, { recursive: true, force: true });
  await rm(entry.infoPath, { force: true });
}

/**
 * Deletes, in every project's trash under `workspacesDir`, the entries trashed more than
 * `olderThanMs` ago. Answers how many went.
 */
export async function pruneTrash(workspacesDir: string, olderThanMs: number, now = Date.now()): Promise<number> {
  let pruned = 0;
  const visit = async (folder: string, depth: number): Promise<void> => {
    const children = await readdir(folder, { withFileTypes: true }).catch(() => []);
    for (const child of children) {
      if (!child.isDirectory()) continue;
      const inside = path.join(folder, child.name);
      if (child.name === "Trash") {
        const { files, info } = { files: path.join(inside, "files"), info: path.join(inside, "info") };
        for (const name of await readdir(info).catch(() => [] as string[])) {
          const id = name.replace(/\.trashinfo$/, "");
          const infoPath = path.join(info, name);
          const infoStats = await stat(infoPath).catch(() => null);
          if (!infoStats || now - infoStats.mtimeMs < olderThanMs) continue;
          await removeTrashEntry({ hostPath: path.join(files, id), infoPath });
          pruned++;
        }
      } else if (depth < 3) {
        await visit(inside, depth + 1);
      }
    }
  };
  await visit(path.join(workspacesDir, trashFolderName), 0);
  return pruned;
}
