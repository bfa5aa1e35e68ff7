import { randomUUID } from "node:crypto";
import { constants, lstatSync, mkdirSync, renameSync, type Stats } from "node:fs";
import { open, readFile, writeFile, type FileHandle } from "node:fs/promises";
import path from "node:path";
import trashToOs from "trash";
import { closeQuietly, holdRoot, resolveComponents, viaDescriptor, type HeldEntry, type Resolution } from "./descriptor-walk.js";
import { isGitFolder } from "./git-folders.js";
import { joinComponents, pathComponents, shorten } from "./path-components.js";
import { protectedGitReason } from "./protected-paths.js";
import { readBounded, walkTree, type TreeFile } from "./workspace-tree.js";
import {
  WorkspaceError,
  type EntryInfo,
  type EntryKind,
  type FileSnapshot,
  type OpenedFile,
  type TrashedFile,
  type UpdateDecision,
  type WorkspaceFiles,
} from "./workspace-files.js";

export interface WorkspaceDoorOptions {
  /** Real path of the workspace folder (chosen by the server, never by a tenant). */
  root: string;
  /**
   * A folder outside every workspace, on the same file system, private to the
   * service: a removed entry is renamed there by descriptor, and only then
   * handed to the OS trash by a path no tenant can change.
   */
  trashStaging: string;
}

const { O_RDONLY, O_RDWR, O_WRONLY, O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;
const readChunkBytes = 1024 * 1024;

/** The workspace door (see `workspace-files.ts` for what it guarantees). */
export function openWorkspaceFiles(options: WorkspaceDoorOptions): WorkspaceFiles {
  const rootPath = options.root;

  /** Resolves `requested` with the root held, runs `use`, and closes every descriptor after. */
  const within = async <T>(requested: string, resolve: { followFinal: boolean; createParents?: boolean; gitCheck?: GitCheck }, use: (resolution: Resolution, root: HeldEntry) => Promise<T> | T): Promise<T> => {
    const components = pathComponents(requested, rootPath);
    const root = holdRoot(rootPath);
    try {
      const gitFolders: string[][] = [];
      const gitFoldersOf = (chain: readonly HeldEntry[]) => chain.filter(isGitFolder).map((folder) => folder.components);
      const resolution = resolveComponents(root, rootPath, components, {
        followFinal: resolve.followFinal,
        createParents: resolve.createParents ? ownerOf(root.stats) : null,
        shown: requested,
        beforeCreate: resolve.gitCheck ? (predicted, chain) => refuseGitMetadata(requested, components, predicted, gitFoldersOf(chain), resolve.gitCheck as GitCheck) : undefined,
        inspect: resolve.gitCheck ? (chain) => void gitFolders.push(...gitFoldersOf(chain)) : undefined,
      });
      try {
        if (resolve.gitCheck) refuseGitMetadata(requested, components, resolution.components, gitFolders, resolve.gitCheck);
        return await use(resolution, root);
      } finally {
        resolution.close();
      }
    } finally {
      closeQuietly(root.fd);
    }
  };

  const files: WorkspaceFiles = {
    locate: (requested) => within(requested, { followFinal: true }, (resolution) => joinComponents(resolution.components)),

    stat: (requested, statOptions) =>
      within(requested, { followFinal: statOptions?.follow === true }, (resolution) =>
        resolution.target ? infoOf(resolution.target) : null,
      ).catch((error: unknown) => {
        if (error instanceof WorkspaceError && (error.code === "file_not_found" || error.code === "not_a_directory")) return null;
        throw error;
      }),

    readFile: (requested, { maxBytes }) =>
      within(requested, { followFinal: true }, async (resolution) => {
        const target = regularFile(resolution, requested);
        if (target.stats.size > maxBytes) throw tooLarge(requested, target.stats.size, maxBytes);
        const handle = await reopen(target, O_RDONLY);
        try {
          return { path: joinComponents(resolution.components), content: await readBounded(handle, maxBytes, requested), mode: target.stats.mode & 0o7777 };
        } finally {
          await handle.close();
        }
      }),

    openFile: (requested) =>
      within(requested, { followFinal: true }, async (resolution) => {
        const target = regularFile(resolution, requested);
        const handle = await reopen(target, O_RDONLY);
        return openedFile(joinComponents(resolution.components), target.stats, handle);
      }),

    snapshot: (requested, { maxBytes }) =>
      within(requested, { followFinal: true }, async (resolution) => ({
        path: joinComponents(resolution.components),
        snapshot: resolution.target ? await snapshotOf(resolution, requested, maxBytes) : ({ kind: "absent" } as const),
      })),

    async update(requested, decide, { maxBytes, createParents = true }) {
      for (let attempt = 0; ; attempt++) {
        const outcome = await within(requested, { followFinal: true, createParents, gitCheck: "write" }, async (resolution, root) => {
          if (resolution.parent === null || resolution.name === null) throw new WorkspaceError("is_directory", "The workspace root is a folder, not a file.");
          const at = joinComponents(resolution.components);
          if (resolution.target === null) return create(resolution.parent, resolution.name, at, decide, ownerOf(root.stats));
          const target = regularFile(resolution, requested);
          if (target.stats.size > maxBytes) throw tooLarge(requested, target.stats.size, maxBytes);
          const handle = await reopen(target, O_RDWR);
          try {
            const before = { kind: "file" as const, content: await readBounded(handle, maxBytes, requested), mode: target.stats.mode & 0o7777 };
            const decision = decide(before);
            if ("keep" in decision) return { kind: "kept" as const, path: at, value: decision.keep };
            const mode = safeMode(decision.mode ?? before.mode);
            await handle.truncate(0);
            await writeAll(handle, decision.write);
            if (mode !== before.mode) await handle.chmod(mode);
            return { kind: "written" as const, path: at, before, after: { kind: "file" as const, content: decision.write, mode } };
          }
          finally {
            await handle.close();
          }
        });
        // Someone created the file between the look and the create: look again, once.
        if (outcome !== raced) return outcome;
        if (attempt > 0) throw new WorkspaceError("io_failed", `"${shorten(requested)}" kept changing while it was written; nothing was written.`);
      }
    },

    async append(requested, content) {
      for (let attempt = 0; ; attempt++) {
        const appended = await within(requested, { followFinal: true, createParents: true, gitCheck: "write" }, async (resolution, root) => {
          if (resolution.parent === null || resolution.name === null) throw new WorkspaceError("is_directory", "The workspace root is a folder, not a file.");
          const at = joinComponents(resolution.components);
          let handle: FileHandle;
          if (resolution.target === null) {
            try {
              handle = await open(viaDescriptor(resolution.parent.fd, resolution.name), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0o644);
            } catch (error) {
              if ((error as NodeJS.ErrnoException).code === "EEXIST") return raced;
              throw new WorkspaceError("io_failed", `Could not create "${at}": ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
            }
            const owner = ownerOf(root.stats);
            if (process.getuid?.() === 0) await handle.chown(owner.uid, owner.gid).catch(() => {});
          } else {
            handle = await reopen(regularFile(resolution, requested), O_WRONLY | O_APPEND);
          }
          try {
            await handle.write(content);
          } finally {
            await handle.close();
          }
          return { path: at };
        });
        if (appended !== raced) return appended;
        if (attempt > 0) throw new WorkspaceError("io_failed", `"${shorten(requested)}" kept changing while it was appended to.`);
      }
    },

    trash: (requested, { maxFiles, maxBytes, refuse }) =>
      within(requested, { followFinal: false, gitCheck: "remove" }, async (resolution) => {
        if (resolution.parent === null || resolution.name === null) throw new WorkspaceError("protected_path", "The workspace root cannot be removed.");
        const at = joinComponents(resolution.components);
        const refusal = refuse?.(at);
        if (refusal) throw new WorkspaceError("protected_path", refusal);
        const target = resolution.target;
        if (!target) throw new WorkspaceError("file_not_found", `Nothing exists at "${shorten(requested)}".`);
        const removed = await recordRemoval(target, at, { maxFiles, maxBytes, shown: requested });
        await moveToTrash(resolution.parent, resolution.name, target.stats, { staging: options.trashStaging, original: path.join(rootPath, at) }, requested);
        return { path: at, kind: kindOf(target.stats), files: removed };
      }),

    walk: (walkOptions, visit) =>
      within(walkOptions.from ?? ".", { followFinal: true }, (resolution) => {
        const start = resolution.target;
        if (!start) throw new WorkspaceError("file_not_found", `No folder "${shorten(walkOptions.from ?? ".")}".`);
        if (!start.stats.isDirectory()) throw new WorkspaceError("not_a_directory", `"${shorten(walkOptions.from ?? ".")}" is not a folder.`);
        const prefix = start.components.length === 0 ? "" : `${joinComponents(start.components)}/`;
        const enter = walkOptions.enter;
        const read = (file: TreeFile) => async (maxBytes: number) => {
          const outcome = await file.read(maxBytes);
          return outcome.kind === "read" ? outcome.content : null;
        };
        return walkTree(start, { ...walkOptions, enter: enter ? (folder) => enter(prefix + folder, folder) : undefined }, (file) =>
          visit({ path: prefix + file.path, relative: file.path, kind: file.kind, read: read(file) }),
        );
      }),
  };
  return files;
}

type GitCheck = "write" | "remove";
const raced = Symbol("raced");

function refuseGitMetadata(requested: string, requestedComponents: readonly string[], resolved: readonly string[], gitFolders: readonly string[][], operation: GitCheck): void {
  const lexical: string[] = [];
  for (const part of requestedComponents) part === ".." ? lexical.pop() : lexical.push(part);
  let reason = protectedGitReason(lexical, operation) ?? protectedGitReason(resolved, operation);
  // A git folder met on the way, whatever its name: its hooks and config are protected as `.git`'s are.
  for (const folder of gitFolders) {
    if (reason) break;
    const rest = resolved.slice(folder.length);
    reason = protectedGitReason([".git", ...rest], operation);
  }
  if (reason) throw new WorkspaceError("protected_path", `"${shorten(requested)}" is protected: ${reason}.`);
}

function ownerOf(stats: Stats): { uid: number; gid: number } {
  return { uid: stats.uid, gid: stats.gid };
}

/** Permission bits a written file may have: setuid and setgid never, whatever the model or the old file asked. */
function safeMode(mode: number): number {
  return mode & 0o777;
}

export function kindOf(stats: Stats): EntryKind {
  if (stats.isFile()) return "file";
  if (stats.isDirectory()) return "directory";
  if (stats.isSymbolicLink()) return "symlink";
  return "special";
}

function infoOf(entry: HeldEntry): EntryInfo {
  return { path: joinComponents(entry.components), kind: kindOf(entry.stats), size: entry.stats.size, mode: entry.stats.mode & 0o7777 };
}

/** The resolved target as a regular file with one link, or the refusal that says what it is instead. */
function regularFile(resolution: Resolution, requested: string): HeldEntry {
  const target = resolution.target;
  if (!target) throw new WorkspaceError("file_not_found", `No file at "${shorten(requested)}".`);
  refuseIrregular(target.stats, requested);
  return target;
}

export function refuseIrregular(stats: Stats, requested: string): void {
  if (stats.isDirectory()) throw new WorkspaceError("is_directory", `"${shorten(requested)}" is a folder.`);
  if (!stats.isFile()) {
    const what = stats.isFIFO() ? "a FIFO" : stats.isSocket() ? "a socket" : stats.isCharacterDevice() || stats.isBlockDevice() ? "a device" : "not a regular file";
    throw new WorkspaceError("special_file", `"${shorten(requested)}" is ${what}; only regular files are read or written.`);
  }
  if (stats.nlink > 1) {
    throw new WorkspaceError("hard_link", `"${shorten(requested)}" has ${stats.nlink} hard links; files with more than one are refused, as another link may be outside the workspace.`);
  }
}

function tooLarge(requested: string, size: number, maxBytes: number): WorkspaceError {
  return new WorkspaceError("too_large", `"${shorten(requested)}" is ${size} bytes; at most ${maxBytes} are handled here.`);
}

/** Opens the object a held `O_PATH` descriptor refers to, for I/O: never by name again. */
async function reopen(entry: HeldEntry, flags: number): Promise<FileHandle> {
  return open(viaDescriptor(entry.fd), flags | O_NONBLOCK | O_NOCTTY);
}

async function snapshotOf(resolution: Resolution, requested: string, maxBytes: number): Promise<FileSnapshot> {
  const target = regularFile(resolution, requested);
  if (target.stats.size > maxBytes) throw tooLarge(requested, target.stats.size, maxBytes);
  const handle = await reopen(target, O_RDONLY);
  try {
    return { kind: "file", content: await readBounded(handle, maxBytes, requested), mode: target.stats.mode & 0o7777 };
  } finally {
    await handle.close();
  }
}

async function create<T>(
  parent: HeldEntry,
  name: string,
  at: string,
  decide: (before: FileSnapshot) => UpdateDecision<T>,
  owner: { uid: number; gid: number },
): Promise<{ kind: "written"; path: string; before: FileSnapshot; after: FileSnapshot } | { kind: "kept"; path: string; value: T } | typeof raced> {
  const decision = decide({ kind: "absent" });
  if ("keep" in decision) return { kind: "kept", path: at, value: decision.keep };
  const mode = safeMode(decision.mode ?? 0o644);
  let handle: FileHandle;
  try {
    handle = await open(viaDescriptor(parent.fd, name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return raced;
    throw new WorkspaceError("io_failed", `Could not create "${at}": ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
  try {
    if (process.getuid?.() === 0) await handle.chown(owner.uid, owner.gid);
    await writeAll(handle, decision.write);
    // The process umask may have narrowed the mode the file was created with.
    await handle.chmod(mode);
  } finally {
    await handle.close();
  }
  return { kind: "written", path: at, before: { kind: "absent" }, after: { kind: "file", content: decision.write, mode } };
}

async function writeAll(handle: FileHandle, content: Buffer): Promise<void> {
  let written = 0;
  while (written < content.length) {
    const { bytesWritten } = await handle.write(content, written, content.length - written, written);
    written += bytesWritten;
  }
}

function openedFile(at: string, stats: Stats, handle: FileHandle): OpenedFile {
  return {
    path: at,
    size: stats.size,
    mode: stats.mode & 0o7777,
    async *chunks(range = {}) {
      let position = range.start ?? 0;
      const end = range.end ?? Number.POSITIVE_INFINITY;
      while (position < end) {
        if (range.signal?.aborted) return;
        const buffer = Buffer.allocUnsafe(Math.min(readChunkBytes, end - position));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
        if (bytesRead === 0) return;
        position += bytesRead;
        yield buffer.subarray(0, bytesRead);
      }
    },
    async head(length) {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, 0);
      return buffer.subarray(0, bytesRead);
    },
    close: () => handle.close(),
  };
}

/** Every regular file a removal takes away, read before anything moves, so the change can be reverted. */
async function recordRemoval(target: HeldEntry, at: string, limits: { maxFiles: number; maxBytes: number; shown: string }): Promise<TrashedFile[]> {
  if (target.stats.isFile()) {
    refuseIrregular(target.stats, limits.shown);
    if (target.stats.size > limits.maxBytes) throw tooLarge(limits.shown, target.stats.size, limits.maxBytes);
    const handle = await reopen(target, O_RDONLY);
    try {
      return [{ path: at, snapshot: { kind: "file", content: await readBounded(handle, limits.maxBytes, limits.shown), mode: target.stats.mode & 0o7777 } }];
    } finally {
      await handle.close();
    }
  }
  if (!target.stats.isDirectory()) return []; // a symlink or special file is moved, not recorded
  const files: TrashedFile[] = [];
  let bytes = 0;
  const tooMuch = () =>
    new WorkspaceError("too_large", `"${shorten(limits.shown)}" is too large to remove recoverably (over ${limits.maxFiles} files or ${limits.maxBytes} bytes); remove smaller parts.`);
  await walkTree(target, { maxEntries: Number.POSITIVE_INFINITY }, async (file) => {
    if (file.kind !== "file") return;
    if (files.length >= limits.maxFiles) throw tooMuch();
    const read = await file.read(limits.maxBytes - bytes);
    if (read.kind === "skipped") {
      if (read.reason === "too_large") throw tooMuch();
      if (read.reason === "hard_link") throw new WorkspaceError("hard_link", `"${at}/${file.path}" has more than one hard link; the removal was refused, as another link may be outside the workspace.`);
      return; // replaced by a link or a special file since the listing: moved along, not recorded
    }
    bytes += read.content.length;
    files.push({ path: `${at}/${file.path}`, snapshot: { kind: "file", content: read.content, mode: read.mode } });
  });
  return files;
}

/**
 * Renames the entry, by its parent's descriptor, into the private staging
 * folder, checks it is the entry that was recorded, then lets the OS trash
 * take it from there by a path no tenant controls. The trash's record then
 * names where the entry really was, so it can be restored from the OS trash.
 */
async function moveToTrash(parent: HeldEntry, name: string, recorded: Stats, where: { staging: string; original: string }, requested: string): Promise<void> {
  mkdirSync(where.staging, { recursive: true, mode: 0o700 });
  const parked = path.join(where.staging, randomUUID());
  const origin = viaDescriptor(parent.fd, name);
  try {
    renameSync(origin, parked);
  } catch (error) {
    throw new WorkspaceError("io_failed", `Could not move "${shorten(requested)}" to the trash: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  }
  const moved = lstatSync(parked);
  if (moved.ino !== recorded.ino || moved.dev !== recorded.dev) {
    renameSync(parked, origin);
    throw new WorkspaceError("io_failed", `"${shorten(requested)}" changed while it was being removed; nothing was removed.`);
  }
  let trashed: unknown;
  try {
    trashed = await trashToOs([parked], { glob: false });
  } catch (error) {
    renameSync(parked, origin);
    throw new WorkspaceError("io_failed", `Could not move "${shorten(requested)}" to the trash: ${(error as Error).message}`);
  }
  await nameOriginal(trashed, where.original);
}

/** Rewrites the `Path=` of the trash's info file (it names the staging folder) to the entry's real place. */
async function nameOriginal(trashed: unknown, original: string): Promise<void> {
  const info = Array.isArray(trashed) ? (trashed[0] as { info?: unknown } | undefined)?.info : undefined;
  if (typeof info !== "string") return;
  const text = await readFile(info, "utf8").catch(() => null);
  if (text === null) return;
  await writeFile(info, text.replace(/^Path=.*$/m, () => `Path=${encodeURI(original)}`)).catch(() => {});
}
