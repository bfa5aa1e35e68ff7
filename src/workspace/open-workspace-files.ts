import { randomUUID } from "node:crypto";
import { constants, linkSync, lstatSync, mkdirSync, renameSync, statSync, unlinkSync, type Stats } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { closeQuietly, holdRoot, resolveComponents, viaDescriptor, type HeldEntry, type Resolution } from "./descriptor-walk.js";
import { isGitFolder } from "./git-folders.js";
import { joinComponents, pathComponents, shorten } from "./path-components.js";
import { protectedGitReason } from "./protected-paths.js";
import { digestOf, kindOf, ownerOf, openedFile, readBounded, refuseIrregular, reopen, safeMode, tooLarge, writeAll } from "./held-file.js";
import { moveToTrash, recordRemoval } from "./workspace-trash.js";
import { walkTree, type TreeFile } from "./workspace-tree.js";
import {
  WorkspaceError,
  type EntryInfo,
  type FileSnapshot,
  type StagedVersion,
  type UpdateDecision,
  type UpdateJournal,
  type UpdateOutcome,
  type WorkspaceFiles,
} from "./workspace-files.js";

export interface WorkspaceDoorOptions {
  /** Real path of the workspace folder (chosen by the server, never by a tenant). */
  root: string;
  /**
   * A folder outside every workspace, on the same file system, private to the
   * service: a removed entry is renamed there by descriptor, and only then
   * handed to the project's trash by a path no tenant can change.
   */
  trashStaging: string;
  /** The project's trash folder (`project-trash.ts`), outside every workspace. */
  trash: string;
}

const { O_RDONLY, O_RDWR, O_WRONLY, O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;

/** The workspace door (see `workspace-files.ts` for what it guarantees). */
export function openWorkspaceFiles(options: WorkspaceDoorOptions): WorkspaceFiles {
  const rootPath = options.root;

  /** Resolves `requested` with the root held, runs `use`, and closes every descriptor after. */
  const within = async <T>(
    requested: string,
    resolve: { followFinal: boolean; createParents?: boolean; gitCheck?: GitCheck },
    use: (resolution: Resolution, root: HeldEntry) => Promise<T> | T,
  ): Promise<T> => {
    const components = pathComponents(requested, rootPath);
    // What the path names as written is checked before anything is opened, missing folders or not.
    if (resolve.gitCheck) refuseGitMetadata(requested, components, [], [], resolve.gitCheck);
    const root = holdRoot(rootPath);
    try {
      const gitFolders: string[][] = [];
      const gitFoldersOf = (chain: readonly HeldEntry[]) => chain.filter(isGitFolder).map((folder) => folder.components);
      const resolution = resolveComponents(root, rootPath, components, {
        followFinal: resolve.followFinal,
        createParents: resolve.createParents ? ownerOf(root.stats) : null,
        shown: requested,
        beforeCreate: resolve.gitCheck
          ? (predicted, chain) => refuseGitMetadata(requested, components, predicted, gitFoldersOf(chain), resolve.gitCheck as GitCheck)
          : undefined,
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

    check: (requested, intent) =>
      within(requested, { followFinal: intent !== "remove", ...(intent === "read" ? {} : { gitCheck: intent }) }, () => undefined).catch(
        (error: unknown) => {
          // Folders a write would create, or a file that is not there yet, are for running to find.
          if (error instanceof WorkspaceError && (error.code === "file_not_found" || error.code === "not_a_directory")) return;
          throw error;
        },
      ),

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
          return {
            path: joinComponents(resolution.components),
            content: await readBounded(handle, maxBytes, requested),
            mode: target.stats.mode & 0o7777,
          };
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

    async update(requested, decide, { maxBytes, createParents = true, larger = "refuse", journal }) {
      for (let attempt = 0; ; attempt++) {
        const outcome = await within(requested, { followFinal: true, createParents, gitCheck: "write" }, async (resolution, root) => {
          if (resolution.parent === null || resolution.name === null)
            throw new WorkspaceError("is_directory", "The workspace root is a folder, not a file.");
          const at = joinComponents(resolution.components);
          if (resolution.target === null)
            return create(resolution.parent, resolution.name, at, decide, ownerOf(root.stats), () => stagingFor(options, journal));
          const target = regularFile(resolution, requested);
          const tooLargeToKeep = target.stats.size > maxBytes;
          if (tooLargeToKeep && larger === "refuse") throw tooLarge(requested, target.stats.size, maxBytes);
          const handle = await reopen(target, O_RDWR);
          try {
            const mode = target.stats.mode & 0o7777;
            const before: FileSnapshot = tooLargeToKeep
              ? { kind: "digest", ...(await digestOf(handle)), mode }
              : { kind: "file", content: await readBounded(handle, maxBytes, requested), mode };
            const decision = decide(before);
            if ("keep" in decision) return { kind: "kept" as const, path: at, value: decision.keep };
            const newMode = safeMode(decision.mode ?? before.mode);
            const after: FileSnapshot = { kind: "file", content: decision.write, mode: newMode };
            const staging = stagingFor(options, journal);
            const tell = staging.beforePlace;
            const replaced = await replaceWhole(
              resolution.parent,
              resolution.name,
              target,
              decision.write,
              newMode,
              staging.folder,
              tell && ((staged: string) => tell({ path: at, before, after, staged })),
            );
            if (replaced !== "on_another_file_system") {
              if (replaced.placed === raced) return raced;
              const placedWith = replaced.placedWith === undefined ? {} : { placedWith: replaced.placedWith };
              return { kind: "written" as const, path: at, before, after, ...placedWith };
            }
            // The staging folder is on another file system than this workspace: written in place, as before.
            await handle.truncate(0);
            await writeAll(handle, decision.write);
            if (newMode !== before.mode) await handle.chmod(newMode);
            return { kind: "written" as const, path: at, before, after };
          } finally {
            await handle.close();
          }
        });
        // Someone created the file between the look and the create: look again, once.
        if (outcome !== raced) return outcome;
        if (attempt > 0)
          throw new WorkspaceError("io_failed", `"${shorten(requested)}" kept changing while it was written; nothing was written.`);
      }
    },

    async append(requested, content) {
      for (let attempt = 0; ; attempt++) {
        const appended = await within(
          requested,
          { followFinal: true, createParents: true, gitCheck: "write" },
          async (resolution, root) => {
            if (resolution.parent === null || resolution.name === null)
              throw new WorkspaceError("is_directory", "The workspace root is a folder, not a file.");
            const at = joinComponents(resolution.components);
            let handle: FileHandle;
            if (resolution.target === null) {
              try {
                handle = await open(
                  viaDescriptor(resolution.parent.fd, resolution.name),
                  O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
                  0o644,
                );
              } catch (error) {
                if ((error as NodeJS.ErrnoException).code === "EEXIST") return raced;
                throw new WorkspaceError(
                  "io_failed",
                  `Could not create "${at}": ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`,
                );
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
          },
        );
        if (appended !== raced) return appended;
        if (attempt > 0) throw new WorkspaceError("io_failed", `"${shorten(requested)}" kept changing while it was appended to.`);
      }
    },

    trash: (requested, { maxFiles, maxBytes, refuse }) =>
      within(requested, { followFinal: false, gitCheck: "remove" }, async (resolution) => {
        if (resolution.parent === null || resolution.name === null)
          throw new WorkspaceError("protected_path", "The workspace root cannot be removed.");
        const at = joinComponents(resolution.components);
        const refusal = refuse?.(at);
        if (refusal) throw new WorkspaceError("protected_path", refusal);
        const target = resolution.target;
        if (!target) throw new WorkspaceError("file_not_found", `Nothing exists at "${shorten(requested)}".`);
        const removed = await recordRemoval(target, at, { maxFiles, maxBytes, shown: requested });
        await moveToTrash(
          resolution.parent,
          resolution.name,
          target.stats,
          { staging: options.trashStaging, trash: options.trash, original: path.join(rootPath, at) },
          requested,
        );
        return { path: at, kind: kindOf(target.stats), files: removed };
      }),

    restoreFromTrash: (requested, from) =>
      within(requested, { followFinal: false, gitCheck: "write" }, async (resolution) => {
        if (resolution.parent === null || resolution.name === null)
          throw new WorkspaceError("protected_path", "Nothing can be restored over the workspace root.");
        const at = joinComponents(resolution.components);
        if (resolution.target)
          throw new WorkspaceError("already_exists", `"${shorten(at)}" exists again; move it away first, then restore.`);
        const destination = viaDescriptor(resolution.parent.fd, resolution.name);
        const entry = lstatSync(from);
        try {
          if (entry.isFile()) {
            // link() fails when the name was taken meanwhile, so nothing is replaced.
            linkSync(from, destination);
            unlinkSync(from);
          } else {
            renameSync(from, destination);
          }
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === "EEXIST" || code === "ENOTEMPTY" || code === "ENOTDIR")
            throw new WorkspaceError("already_exists", `"${shorten(at)}" exists again; move it away first, then restore.`);
          throw new WorkspaceError("io_failed", `Could not restore "${shorten(at)}": ${code ?? (error as Error).message}.`);
        }
        return { path: at };
      }),

    walk: (walkOptions, visit) =>
      within(walkOptions.from ?? ".", { followFinal: true }, (resolution) => {
        const start = resolution.target;
        if (!start) throw new WorkspaceError("file_not_found", `No folder "${shorten(walkOptions.from ?? ".")}".`);
        if (!start.stats.isDirectory())
          throw new WorkspaceError("not_a_directory", `"${shorten(walkOptions.from ?? ".")}" is not a folder.`);
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

function refuseGitMetadata(
  requested: string,
  requestedComponents: readonly string[],
  resolved: readonly string[],
  gitFolders: readonly string[][],
  operation: GitCheck,
): void {
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

/**
 * Writes `bytes` to a file of its own in the private staging folder, with the owner and mode the
 * workspace file will have, then lets `place` put it under its name (`update`): a reader, or a
 * worker killed halfway, finds no file or one whole version, never part of one. A worker killed
 * before `place` leaves the bytes in the staging folder, outside the workspace
 * (`removeStaleWrites`). The staged name is removed after, placed or not, except when
 * `beforePlace` was told of it and it was not placed: whoever it told reads "not placed" from it.
 */
async function writeStaged<R, P>(
  staging: string,
  to: { dev: number; name: string; uid: number; gid: number; mode: number },
  bytes: Buffer,
  place: (written: string) => R,
  beforePlace: ((staged: string) => Promise<P>) | undefined,
): Promise<{ placed: R; placedWith?: P } | "on_another_file_system"> {
  mkdirSync(staging, { recursive: true, mode: 0o700 });
  if (statSync(staging).dev !== to.dev) return "on_another_file_system";
  const written = path.join(staging, `write-${randomUUID()}`);
  const failed = (error: unknown) =>
    new WorkspaceError("io_failed", `Could not write "${to.name}": ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`);
  let told = false;
  let placed = false;
  try {
    try {
      const handle = await open(written, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, 0o600);
      try {
        if (process.getuid?.() === 0) await handle.chown(to.uid, to.gid);
        await writeAll(handle, bytes);
        await handle.chmod(to.mode);
      } finally {
        await handle.close();
      }
    } catch (error) {
      throw failed(error);
    }
    let noted: { placedWith?: P } = {};
    if (beforePlace) {
      told = true;
      noted = { placedWith: await beforePlace(written) };
    }
    let outcome: R;
    try {
      outcome = place(written);
    } catch (error) {
      throw failed(error);
    }
    placed = outcome !== raced;
    return { placed: outcome, ...noted };
  } finally {
    if (!told || placed) {
      try {
        unlinkSync(written);
      } catch {
        // renamed into place, or never made
      }
    }
  }
}

/**
 * Replaces a file whole: renamed over the old one, if the name still holds the file that was read;
 * a file put there meanwhile is not overwritten (the update looks again, once), though one put
 * there between that check and the rename would be, as with a layer's apply (known gaps).
 */
function replaceWhole<P>(
  parent: HeldEntry,
  name: string,
  target: HeldEntry,
  content: Buffer,
  mode: number,
  staging: string,
  beforePlace: ((staged: string) => Promise<P>) | undefined,
) {
  const { dev, uid, gid, ino } = target.stats;
  return writeStaged(
    staging,
    { dev, name, uid, gid, mode },
    content,
    (written) => {
      const now = lstatOrNull(viaDescriptor(parent.fd, name));
      if (!now || now.ino !== ino || now.dev !== dev) return raced;
      renameSync(written, viaDescriptor(parent.fd, name));
      return "replaced" as const;
    },
    beforePlace,
  );
}

/** Creates a file whole: linked in under its name (a link never replaces: a file put there meanwhile makes the update look again). */
function createWhole<P>(
  parent: HeldEntry,
  name: string,
  bytes: Buffer,
  mode: number,
  owner: { uid: number; gid: number },
  staging: string,
  beforePlace: ((staged: string) => Promise<P>) | undefined,
) {
  return writeStaged(
    staging,
    { dev: parent.stats.dev, name, ...owner, mode },
    bytes,
    (written) => {
      try {
        linkSync(written, viaDescriptor(parent.fd, name));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") return raced;
        throw error;
      }
      return "created" as const;
    },
    beforePlace,
  );
}

/** Where a version is staged, and whom to tell before it is placed. */
interface Staging<P> {
  folder: string;
  beforePlace?: (version: StagedVersion) => Promise<P>;
}

/** The journal's own folder when it has one (a version it was told of and that was not placed stays there); else the door's. */
function stagingFor<P>(options: WorkspaceDoorOptions, journal: UpdateJournal<P> | undefined): Staging<P> {
  const folder = journal?.folder() ?? null;
  if (journal === undefined || folder === null) return { folder: options.trashStaging };
  return { folder, beforePlace: (version) => journal.beforePlace(version) };
}

function lstatOrNull(at: string): Stats | null {
  try {
    return lstatSync(at);
  } catch {
    return null;
  }
}

async function create<T, P>(
  parent: HeldEntry,
  name: string,
  at: string,
  decide: (before: FileSnapshot) => UpdateDecision<T>,
  owner: { uid: number; gid: number },
  stagingOf: () => Staging<P>,
): Promise<UpdateOutcome<T, P> | typeof raced> {
  const before: FileSnapshot = { kind: "absent" };
  const decision = decide(before);
  if ("keep" in decision) return { kind: "kept", path: at, value: decision.keep };
  const mode = safeMode(decision.mode ?? 0o644);
  const after: FileSnapshot = { kind: "file", content: decision.write, mode };
  const staging = stagingOf();
  const tell = staging.beforePlace;
  const made = await createWhole(
    parent,
    name,
    decision.write,
    mode,
    owner,
    staging.folder,
    tell && ((staged: string) => tell({ path: at, before, after, staged })),
  );
  if (made !== "on_another_file_system") {
    if (made.placed === raced) return raced;
    return { kind: "written", path: at, before, after, ...(made.placedWith === undefined ? {} : { placedWith: made.placedWith }) };
  }
  // The staging folder is on another file system than this workspace: created in place, as before.
  let handle: FileHandle;
  try {
    handle = await open(viaDescriptor(parent.fd, name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return raced;
    throw new WorkspaceError(
      "io_failed",
      `Could not create "${at}": ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`,
    );
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
