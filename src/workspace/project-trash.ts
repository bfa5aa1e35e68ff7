import { createHash, randomBytes } from "node:crypto";
import { linkSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { lstat, mkdir, opendir, readdir, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import { runChild } from "../processes/start-child.js";

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

/**
 * A trash entry's id: a UUID of version 7, whose first 48 bits are the time in milliseconds, so
 * the entries' names sort in the order they were trashed. The listing pages through the names
 * alone (`listTrashPage`); the ids keep the format the API has always accepted.
 */
export function timeOrderedId(now = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// The trash package names entries with crypto.randomUUID: the child hands it the parent's
// time-ordered ids instead (syncBuiltinESMExports makes the package's import see the change).
const moveScript = `
import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
const ids = JSON.parse(process.argv[2]);
const random = crypto.randomUUID;
crypto.randomUUID = () => ids.shift() ?? random();
syncBuiltinESMExports();
const { default: trash } = await import(process.argv[1]);
const moved = await trash(process.argv.slice(3), { glob: false });
process.stdout.write(JSON.stringify(moved));
`;
const trashModule = import.meta.resolve("trash");

/** Moves host paths (never a tenant's) into the trash at `root`; answers where each went, with its info file. */
export async function moveIntoTrash(root: string, paths: readonly string[]): Promise<Array<{ path: string; info: string }>> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  const ids = JSON.stringify(paths.map(() => timeOrderedId()));
  const child = await runChild(process.execPath, ["--input-type=module", "-e", moveScript, trashModule, ids, ...paths], {
    env: { HOME: root, XDG_DATA_HOME: root, PATH: process.env.PATH ?? "/usr/bin:/bin", ...(process.env.TZ ? { TZ: process.env.TZ } : {}) },
  });
  if (child.end.kind === "not_started") throw new Error(`the trash could not be started: ${child.end.error.message}`);
  if (child.end.exitCode !== 0)
    throw new Error(`the trash refused: ${child.stderr.split("\n").find((line) => line.trim() !== "") ?? `exit ${child.end.exitCode}`}`);
  return JSON.parse(child.stdout) as Array<{ path: string; info: string }>;
}

/**
 * Moves entries into the trash at `root` by rename, in the layout the trash package
 * writes (an info file naming where each was, then the entry under the same id): for
 * the apply of a layered call (SPEC X7), which removes entries on the workspaces' own
 * file system and cannot spend a child process on each. The trash's folders are made
 * once per placer, not per entry. `from` may be a descriptor path
 * (`/proc/self/fd/<fd>/<name>`, bytes when the name is not UTF-8); `originalPath` is
 * the host path it had, as bytes (percent-encoded in the info file, as the trash
 * specification asks, so a name that is not UTF-8 is kept exactly). Answers the id.
 */
export interface TrashPlacer {
  /** Moves the entry at `from` into the trash. */
  place(from: string | Buffer, originalPath: string | Buffer): string;
  /**
   * Keeps the file at `from` in the trash as a second link, leaving it in place: a rename
   * that replaces it next is then atomic for readers, and its old version is kept.
   */
  keepCopy(from: string | Buffer, originalPath: string | Buffer): string;
  /**
   * One trash entry for many kept files: a folder that will be restored whole to `originalPath`,
   * holding each file (a second link, as `keepCopy`) at its path below it. For a call that
   * replaced thousands of files: one entry instead of thousands, and no file made per copy.
   */
  bundle(originalPath: string | Buffer): TrashBundle;
}

export interface TrashBundle {
  /** The host path of the folder at `relative` (names below the bundle's folder), made if need be; null when it is too long to name. */
  folderFor(relative: readonly Buffer[]): Buffer | null;
}

/** Paths inside a bundle are named at once, so they must fit the kernel's limit. */
const maxBundlePathBytes = 4000;

export function trashPlacer(root: string): TrashPlacer {
  const { files, info } = folders(root);
  let made = false;
  const put = (originalPath: string | Buffer, move: (to: string) => void): string => {
    if (!made) {
      mkdirSync(files, { recursive: true, mode: 0o700 });
      mkdirSync(info, { recursive: true, mode: 0o700 });
      made = true;
    }
    const id = timeOrderedId();
    const infoPath = path.join(info, `${id}.trashinfo`);
    const deletedAt = new Date().toISOString().replace(/\.\d{3}Z$/, "");
    writeFileSync(infoPath, `[Trash Info]\nPath=${percentEncode(originalPath)}\nDeletionDate=${deletedAt}\n`, {
      flag: "wx",
      mode: 0o600,
    });
    try {
      move(path.join(files, id));
    } catch (error) {
      rmSync(infoPath, { force: true });
      throw error;
    }
    return id;
  };
  return {
    place: (from, originalPath) => put(originalPath, (to) => renameSync(from, to)),
    keepCopy: (from, originalPath) => put(originalPath, (to) => linkSync(from, to)),
    bundle(originalPath) {
      let folder: string | undefined;
      const made = new Set<string>();
      return {
        folderFor(relative) {
          folder ??= (() => {
            let at = "";
            put(originalPath, (to) => {
              mkdirSync(to, { mode: 0o700 });
              at = to;
            });
            return at;
          })();
          const parts: Buffer[] = [Buffer.from(folder)];
          for (const name of relative) parts.push(Buffer.from("/"), name);
          const target = Buffer.concat(parts);
          // Room for a file's name below it.
          if (target.length > maxBundlePathBytes - 256) return null;
          const key = target.toString("latin1");
          // The bundle is root's, outside every workspace: plain paths are safe here.
          if (!made.has(key)) {
            mkdirSync(target, { mode: 0o700, recursive: true });
            made.add(key);
          }
          return target;
        },
      };
    },
  };
}

/** The bytes `encodeURI` leaves as they are. */
const keptAsIs = new Set(Buffer.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789;,/?:@&=+$-_.!~*'()#"));

/** `encodeURI` over bytes: what `decodeURI` gives back for UTF-8, and every other byte kept as `%XX`. */
function percentEncode(original: string | Buffer): string {
  const bytes = typeof original === "string" ? Buffer.from(original) : original;
  let encoded = "";
  for (const byte of bytes)
    encoded += keptAsIs.has(byte) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  return encoded;
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

export interface TrashPage {
  /** Newest first, at most the page's limit (fewer when an entry went while the page was read). */
  entries: TrashEntry[];
  /** The id to pass as `after` for the next page; null after the last. */
  next: string | null;
  /** Entries whose records were read for this page: never more than the limit. */
  read: number;
}

/** The directory entries fetched per read of the trash's record folder (node's default is 32). */
const namesPerRead = 1024;

/**
 * One page of the project's trash, newest first, after the entry `after` (SPEC F4). Ids are
 * time-ordered (`timeOrderedId`; older entries' random ids sort among them by chance), so the
 * order is the names' own: the record folder's names are listed as the kernel stores them,
 * keeping only the `limit + 1` greatest below `after`, and only the page's entries are read.
 * A page costs one pass over the names (no I/O per entry, memory for one page) and at most
 * `limit` record reads, whatever the trash holds: 216,000 entries read whole took 38 s and
 * 28 MB per listing. An entry trashed while a client pages lands on the page its id falls in.
 */
export async function listTrashPage(
  root: string,
  workspacePath: string,
  page: { limit: number; after?: string | undefined },
): Promise<TrashPage> {
  const { files, info } = folders(root);
  const newest: string[] = [];
  const keep = page.limit + 1;
  const folder = await opendir(info, { bufferSize: namesPerRead }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  if (folder) {
    for await (const entry of folder) {
      const id = entry.name.endsWith(".trashinfo") ? entry.name.slice(0, -".trashinfo".length) : "";
      if (!idPattern.test(id) || (page.after !== undefined && id >= page.after)) continue;
      if (newest.length === keep && id <= (newest[keep - 1] as string)) continue;
      newest.splice(insertionPoint(newest, id), 0, id);
      if (newest.length > keep) newest.pop();
    }
  }
  const ids = newest.slice(0, page.limit);
  const entries: TrashEntry[] = [];
  for (const id of ids) {
    const entry = await readEntry(files, info, id, workspacePath);
    if (entry) entries.push(entry);
  }
  return { entries, next: newest.length > page.limit ? (ids.at(-1) ?? null) : null, read: ids.length };
}

/** Where `id` goes in `descending` (greatest first) to keep it sorted. */
function insertionPoint(descending: readonly string[], id: string): number {
  let low = 0;
  let high = descending.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((descending[middle] as string) > id) low = middle + 1;
    else high = middle;
  }
  return low;
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
