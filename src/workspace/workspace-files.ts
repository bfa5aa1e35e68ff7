/**
 * The one door to a project's workspace (SPEC S6). Every file operation of
 * built-in tools, file-change snapshots, revert and approval previews goes
 * through a `WorkspaceFiles`; tools get one in their context and no host path.
 *
 * What it guarantees, whatever path a model or tenant writes:
 * - nothing outside the workspace is opened, read, written, moved or even
 *   looked at: absolute paths outside, `..` past the root and symlinks whose
 *   target lies outside are refused before anything is opened there;
 * - no race between check and use: paths are walked one component at a time
 *   from descriptors held open (`O_PATH | O_NOFOLLOW`), each step relative to
 *   the directory object already checked, never by name from the top again;
 * - FIFOs, sockets and devices are refused at once, without blocking (an
 *   `O_PATH` open never waits for a FIFO's writer);
 * - a regular file with more than one hard link is refused (the other link may
 *   be outside);
 * - reads are bounded in bytes; writes never leave setuid or setgid bits and
 *   new files belong to the workspace's owner (the tenant's tool identity);
 * - git metadata that runs code (`hooks`, `config` of any repository in the
 *   workspace, nested ones included) is never written.
 *
 * Paths are relative to the workspace root ("/"-separated); an absolute path is
 * accepted only when it lies inside the workspace. Answers name paths the same
 * way, normalized and with symlinks inside the workspace resolved.
 */

/**
 * A file's content and mode at one moment; `absent` also covers "never
 * existed". `digest` is a file too large to keep: known by its sha256 and size
 * only, so a change from it cannot be reverted (the file still goes to the OS
 * trash when deleted).
 */
export type FileSnapshot =
  | { kind: "absent" }
  | { kind: "file"; content: Buffer; mode: number }
  | { kind: "digest"; sha256: string; size: number; mode: number };

/** Why the door refused; stable codes a tool passes on as its `is_error` code. */
export type WorkspaceErrorCode =
  | "invalid_path"
  | "path_outside_workspace"
  | "file_not_found"
  | "is_directory"
  | "not_a_directory"
  | "special_file"
  | "hard_link"
  | "too_large"
  | "protected_path"
  | "already_exists"
  | "io_failed";

export class WorkspaceError extends Error {
  readonly code: WorkspaceErrorCode;
  constructor(code: WorkspaceErrorCode, message: string) {
    super(message);
    this.name = "WorkspaceError";
    this.code = code;
  }
}

export function isWorkspaceError(error: unknown): error is WorkspaceError {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "WorkspaceError";
}

export type EntryKind = "file" | "directory" | "symlink" | "special";

export interface EntryInfo {
  /** Normalized path inside the workspace ("." for the root). */
  path: string;
  kind: EntryKind;
  size: number;
  /** Permission bits (0o7777). */
  mode: number;
}

/** A regular file opened for reading: the descriptor refers to the checked file, whatever its name points at later. */
export interface OpenedFile {
  path: string;
  size: number;
  mode: number;
  /** Bytes from `start` to the end (or `end`), in chunks; the file is read as it is now. */
  chunks(options?: { start?: number; end?: number; signal?: AbortSignal }): AsyncIterable<Buffer>;
  /** The first `length` bytes (fewer if the file is shorter). */
  head(length: number): Promise<Buffer>;
  close(): Promise<void>;
}

/** What an update decides once it has seen the file's current content. */
export type UpdateDecision<T> = { write: Buffer; mode?: number } | { keep: T };

export type UpdateOutcome<T, P = never> =
  | { kind: "written"; path: string; before: FileSnapshot; after: FileSnapshot; placedWith?: P }
  | { kind: "kept"; path: string; value: T };

/**
 * A new version written whole beside the workspace, about to be placed under its name. `staged`
 * is the written file: once the version is placed it is gone (renamed over the old file) or has
 * a second link (a new file's name), so whoever reads it after a crash knows whether it was placed.
 */
export interface StagedVersion {
  path: string;
  before: FileSnapshot;
  after: FileSnapshot;
  staged: string;
}

/** Whoever must know of an update's new version before it is placed. */
export interface UpdateJournal<P> {
  /**
   * A folder of its own, on the workspace's file system, to stage the version in (asked once a
   * version is to be written); null to stage it in the door's own folder untold. A version staged
   * there and not placed stays there, so the journal reads "not placed" from it after a crash.
   */
  folder(): string | null;
  /** Told once the version is staged whole; what it answers comes back as `placedWith`. Not told when the folder is on another file system than the workspace (the version is then written in place). */
  beforePlace(version: StagedVersion): Promise<P>;
}

/** A file moved to the trash, with what it held, so a revert can bring it back. */
export interface TrashedFile {
  path: string;
  snapshot: Exclude<FileSnapshot, { kind: "absent" }>;
}

export interface TrashOutcome {
  path: string;
  kind: EntryKind;
  /** Every regular file that was removed, with its content (for a folder: all files inside it). */
  files: TrashedFile[];
}

/** A regular file met by `walk`; `read` opens it from the folder the walk holds, not by name. */
export interface WalkedFile {
  /** Path inside the workspace. */
  path: string;
  /** Path relative to the folder the walk started from. */
  relative: string;
  kind: "file" | "symlink";
  read(maxBytes: number): Promise<Buffer | null>;
}

export interface WalkOptions {
  /** Folder to start from (default the root). */
  from?: string;
  /** Folder names never entered (matched on the name alone, at any depth). */
  skipFolders?: ReadonlySet<string>;
  /** Asked before entering a folder (its path inside the workspace, and relative to `from`); false skips it. */
  enter?(path: string, relative: string): boolean;
  /** Entries (files, links, folders) looked at before the walk stops; default 100,000. */
  maxEntries?: number;
  signal?: AbortSignal;
}

export interface WalkOutcome {
  /** Entries looked at. */
  visited: number;
  /** The walk stopped at `maxEntries`. */
  truncated: boolean;
  cancelled: boolean;
}

export interface WorkspaceFiles {
  /** The normalized path inside the workspace that `requested` leads to (symlinks inside followed). */
  locate(requested: string): Promise<string>;
  /**
   * Throws the refusal the operation `intent` on `requested` would meet for the
   * path itself (outside the workspace, invalid, protected git metadata), and
   * nothing for what only running finds (a missing file, its size): what the
   * approval gateway asks before it would ask a human about a call.
   */
  check(requested: string, intent: "read" | "write" | "remove"): Promise<void>;
  /** What is at `requested`; null when nothing is. A final symlink is described as itself unless `follow`. */
  stat(requested: string, options?: { follow?: boolean }): Promise<EntryInfo | null>;
  /** A regular file's content, whole; refused above `maxBytes`. */
  readFile(requested: string, options: { maxBytes: number }): Promise<{ path: string; content: Buffer; mode: number }>;
  /** A regular file opened for streaming reads; the caller closes it. */
  openFile(requested: string): Promise<OpenedFile>;
  /** The file as it is now (absent when nothing is there), for diffs and previews; refused above `maxBytes`. */
  snapshot(requested: string, options: { maxBytes: number }): Promise<{ path: string; snapshot: FileSnapshot }>;
  /**
   * Reads the file (absent is fine), lets `decide` choose, and writes it
   * whole: the new content goes to a file of its own, linked in under the name
   * (a new file) or renamed over the one that was read if that is still the
   * file at the name (`before` and `after` are of one name), so a reader or a
   * crash sees no file or one whole version, never part of one. Missing parent folders are created. The new mode is `mode`,
   * else the old one, else 0644, never with setuid or setgid.
   */
  update<T, P = never>(
    requested: string,
    decide: (before: FileSnapshot) => UpdateDecision<T>,
    options: {
      maxBytes: number;
      createParents?: boolean;
      /** A file over `maxBytes` is refused (default), or (a write that replaces it whole) passed to `decide` by its digest only. */
      larger?: "refuse" | "digest";
      /** Told of the new version before it is placed (a call's journaled record, `door-journal.ts`). */
      journal?: UpdateJournal<P>;
    },
  ): Promise<UpdateOutcome<T, P>>;
  /**
   * Appends to a regular file, creating it (and missing folders) when absent;
   * each append is one `O_APPEND` write, so concurrent appends never lose each
   * other's bytes. Not recorded as a file change: for logs and markers.
   */
  append(requested: string, content: Buffer): Promise<{ path: string }>;
  /**
   * Moves a file, link or folder to the project's trash (a final symlink is moved, not
   * its target), recording every regular file it removes: whole up to
   * `maxBytes` in all, by digest only past it; refused when that would take
   * more than `maxFiles` files, or
   * when `refuse` gives a reason for the resolved path (checked on the entry
   * actually removed, so no rename in between can slip past it).
   */
  trash(requested: string, options: { maxFiles: number; maxBytes: number; refuse?(path: string): string | null }): Promise<TrashOutcome>;
  /**
   * Puts an entry of the project's trash (`from`, a host path outside every workspace that
   * no tenant controls) back at `requested`, whose folder must exist. Never replaces
   * anything: a file goes back by a hard link that fails if the name is taken; a folder or
   * link by a rename into a name that is free.
   */
  restoreFromTrash(requested: string, from: string): Promise<{ path: string }>;
  /** Visits files and symlinks below a folder, never following a link, sorted by path within each folder. */
  walk(options: WalkOptions, visit: (file: WalkedFile) => void | Promise<void>): Promise<WalkOutcome>;
}
