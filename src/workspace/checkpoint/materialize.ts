import { chmodSync, constants, openSync, readdirSync } from "node:fs";
import { timeSlices } from "../../core/time-slices.js";
import { closeQuietly } from "../descriptor-walk.js";
import { rootPath, viaDescriptorBytes } from "../entry-path.js";
import { openFolderHandles } from "../folder-handles.js";
import { blobWindow } from "./blob-window.js";
import { type BlobContent, type WriteContext, type WriteOutcome, writeFile, writeFolder, writeLink } from "./entry-writers.js";
import type { LinkRefusal } from "./link-confinement.js";
import type { TreeEntries } from "./tree-entry.js";
import { type PlannedEntry, planTree } from "./tree-plan.js";

/**
 * Rebuilds a checkpointed tree into an empty folder (SPEC W1): on any host,
 * from the tree and a source of blobs by digest. Nothing is written before
 * the whole tree is checked (`tree-plan.ts`); folders come first, then what
 * they hold, in tree order (`entry-writers.ts`); folders get their modes last,
 * deepest first, so a read-only folder is filled before it is closed.
 *
 * A failed rebuild leaves what it wrote, with every folder still 0700 (so it
 * can be removed): the caller removes the target and tries again or reports.
 * Nothing is synced to disk: a rebuild cut by a crash is simply done again.
 */
export interface MaterializeOptions {
  /**
   * The blob of a digest, or null when the store has none. Called in tree order, a few ahead
   * (`blobsAhead`): a large blob should come as a stream, read only when its file is written.
   */
  blob(sha256: string): Promise<BlobContent | null>;
  /** Owner of everything written (the tenant's tool identity); both or neither. Needs root. */
  uid?: number;
  gid?: number;
  /** Blob requests in flight at most. Default 8. */
  blobsAhead?: number;
  /** Aborts between slices; the rebuild then throws its reason. */
  signal?: AbortSignal;
}

export type MaterializeResult =
  | { ok: true; folders: number; files: number; symlinks: number; refused: RefusedLink[] }
  | { ok: false; error: MaterializeError; path: string | null; message: string };

export type MaterializeError = "not_a_folder" | "not_empty" | "invalid_tree" | "missing_blob" | "digest_mismatch" | "io_failed";

/** A symlink kept in the checkpoint but not written, as it would lead outside the workspace. */
export interface RefusedLink {
  path: string;
  target: string;
  reason: LinkRefusal;
}

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;

export async function materializeTree(target: string, tree: TreeEntries, options: MaterializeOptions): Promise<MaterializeResult> {
  const plan = planTree(tree);
  if (!plan.ok) return { ok: false, error: "invalid_tree", path: plan.path, message: plan.message };
  if ((options.uid === undefined) !== (options.gid === undefined))
    return { ok: false, error: "invalid_tree", path: null, message: "uid and gid go together." };
  const opened = openEmptyFolder(target);
  if (typeof opened !== "number") return opened;
  const folders = openFolderHandles(opened);
  try {
    const context: WriteContext = {
      folders,
      tree,
      owner: options.uid === undefined ? null : { uid: options.uid, gid: options.gid as number },
      slices: timeSlices(),
      signal: options.signal,
      folderPaths: new Map([["", rootPath]]),
    };
    const result = await writeAll(context, plan.entries, options);
    return result.ok ? ((await setFolderModes(context, plan.entries)) ?? result) : result;
  } finally {
    folders.close();
    closeQuietly(opened);
  }
}

async function writeAll(context: WriteContext, entries: PlannedEntry[], options: MaterializeOptions): Promise<MaterializeResult> {
  const digests = entries.flatMap(({ entry }) => (entry.kind === "file" ? [entry.sha256] : []));
  const blobs = blobWindow(digests, (sha256) => options.blob(sha256), options.blobsAhead ?? 8);
  const counts = { folders: 0, files: 0, symlinks: 0 };
  const refused: RefusedLink[] = [];
  for (const planned of entries) {
    const { entry } = planned;
    let outcome: WriteOutcome;
    try {
      if (entry.kind === "directory") outcome = writeFolder(context, planned);
      else if (entry.kind === "file") outcome = await writeFile(context, planned, await blobs.next());
      else outcome = writeLink(context, planned);
    } catch (error) {
      if (!isSystemError(error)) throw error;
      outcome = { kind: "failed", error: "io_failed", message: `Writing failed: ${(error as NodeJS.ErrnoException).code}.` };
    }
    if (outcome.kind === "failed") return { ok: false, error: outcome.error, path: entry.path, message: outcome.message };
    if (outcome.kind === "refused" && entry.kind === "symlink")
      refused.push({ path: entry.path, target: entry.target, reason: outcome.reason });
    else if (entry.kind === "directory") counts.folders++;
    else if (entry.kind === "file") counts.files++;
    else counts.symlinks++;
    if (context.slices.spent()) {
      options.signal?.throwIfAborted();
      await context.slices.pause();
    }
  }
  return { ok: true, ...counts, refused };
}

/** Each folder's mode, deepest first (a folder after everything inside it), through its held descriptor; a failure answered. */
async function setFolderModes(context: WriteContext, entries: PlannedEntry[]): Promise<MaterializeResult | null> {
  for (let index = entries.length - 1; index >= 0; index--) {
    const { entry } = entries[index] as PlannedEntry;
    if (entry.kind !== "directory") continue;
    const at = context.folderPaths.get(entry.path);
    const fd = at ? context.folders.folder(at) : null;
    if (fd === null) return { ok: false, error: "io_failed", path: entry.path, message: "A folder the rebuild wrote is gone." };
    try {
      chmodSync(viaDescriptorBytes(fd), entry.mode);
    } catch (error) {
      if (!isSystemError(error)) throw error;
      return {
        ok: false,
        error: "io_failed",
        path: entry.path,
        message: `Setting the mode failed: ${(error as NodeJS.ErrnoException).code}.`,
      };
    }
    if (context.slices.spent()) await context.slices.pause();
  }
  return null;
}

/** The target held open, if it is an existing, empty, real folder. */
function openEmptyFolder(target: string): number | MaterializeResult {
  let fd: number;
  try {
    fd = openSync(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, error: "not_a_folder", path: null, message: `The target is not an existing folder (${code}).` };
  }
  if (readdirSync(viaDescriptorBytes(fd)).length > 0) {
    closeQuietly(fd);
    return {
      ok: false,
      error: "not_empty",
      path: null,
      message: "The target folder is not empty; a rebuild writes only into an empty one.",
    };
  }
  return fd;
}

function isSystemError(error: unknown): boolean {
  return typeof (error as NodeJS.ErrnoException | null)?.syscall === "string";
}
