import { chownSync, closeSync, constants, fstatSync, mkdirSync, openSync, readlinkSync, type Stats } from "node:fs";
import { relativeInside, shorten } from "./path-components.js";
import { WorkspaceError } from "./workspace-files.js";

/**
 * Path resolution inside a workspace, one component at a time, from
 * descriptors held open: the race-free core of the workspace door (SPEC S6).
 *
 * Node has no `openat`; `/proc/self/fd/<fd>/<name>` is its equivalent: the
 * kernel jumps to the directory object the descriptor holds (renaming or
 * swapping its path meanwhile changes nothing) and looks up `name` there.
 * Each component is opened `O_PATH | O_NOFOLLOW`, which opens a symlink as
 * itself and never blocks or touches a device. A symlink's target is read as
 * text and walked the same way: `..` pops our own stack of held folders (so
 * it stops at the root), an absolute target must lie inside the workspace.
 * Nothing outside the workspace is ever opened, not even to check it.
 *
 * The calls are synchronous on purpose: each is one non-blocking syscall on a
 * local path (an `O_PATH` open, an fstat, a readlink), about a microsecond,
 * where a trip through libuv's small thread pool costs tens.
 */

export const O_PATH = 0o10000000;
const { O_NOFOLLOW, O_DIRECTORY } = constants;
/** Symlinks followed in one resolution, as the kernel's own limit. */
const maxSymlinkHops = 40;

/** A path that reaches the object `fd` holds, and `name` inside it. */
export function viaDescriptor(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

/** An entry held open `O_PATH`, with its path inside the workspace. */
export interface HeldEntry {
  fd: number;
  stats: Stats;
  components: string[];
}

export interface Resolution {
  /** The folder holding the target; null when the target is the workspace root. */
  parent: HeldEntry | null;
  /** The target's name in `parent`; null for the root. */
  name: string | null;
  /** The target, held open; null when nothing exists there yet (its parent does). */
  target: HeldEntry | null;
  /** Where the target is (or would be), normalized. */
  components: string[];
  /** Closes every descriptor this resolution holds (never the root's). */
  close(): void;
}

export interface ResolveOptions {
  /** Follow a final symlink (read, write) or describe it as itself (delete, stat). */
  followFinal: boolean;
  /** Create missing parent folders, owned by this identity. */
  createParents?: { uid: number; gid: number } | null;
  /** The requested text, for messages. */
  shown: string;
  /**
   * Called with the path the target will have before a missing folder is
   * created on the way (everything after it is new, so the path is known): a
   * throw stops the walk before anything is made.
   */
  beforeCreate?(finalComponents: readonly string[], chain: readonly HeldEntry[]): void;
  /** Sees the chain of folders from the root to the target's parent while they are still held. */
  inspect?(chain: readonly HeldEntry[]): void;
}

export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}

/**
 * Resolves `components` from the held root. Throws a `WorkspaceError` for a
 * path leading outside, through a non-folder, or (without `createParents`) a
 * missing folder on the way.
 */
export function resolveComponents(root: HeldEntry, rootPath: string, components: readonly string[], options: ResolveOptions): Resolution {
  const stack: HeldEntry[] = [root];
  const queue = [...components];
  let hops = 0;
  const closeStack = () => {
    for (const entry of stack.splice(1)) closeQuietly(entry.fd);
  };
  try {
    for (;;) {
      const component = queue.shift();
      const top = stack[stack.length - 1] as HeldEntry;
      if (component === undefined) {
        // The path named a folder we hold (the root, or one reached through ".." or a link).
        if (top === root) return rootResolution(root, options);
        stack.pop();
        const parent = stack[stack.length - 1] as HeldEntry;
        return finish(stack, parent, top.components[top.components.length - 1] as string, top, options);
      }
      if (component === "..") {
        if (stack.length === 1)
          throw outside(
            options.shown,
            hops > 0 ? "leads outside the workspace through a symbolic link" : "climbs above the workspace root with '..'",
          );
        closeQuietly((stack.pop() as HeldEntry).fd);
        continue;
      }
      const last = queue.length === 0;
      let fd = openEntry(top, component, options.shown);
      if (fd === null) {
        if (last) return finish(stack, top, component, null, options);
        if (!options.createParents)
          throw new WorkspaceError(
            "file_not_found",
            `No folder "${[...top.components, component].join("/")}" on the way to "${shorten(options.shown)}".`,
          );
        options.beforeCreate?.(predictPath([...top.components, component], queue), stack);
        fd = makeFolder(top, component, options.createParents, options.shown);
      }
      const stats = fstatSync(fd);
      if (stats.isSymbolicLink()) {
        if (last && !options.followFinal)
          return finish(stack, top, component, { fd, stats, components: [...top.components, component] }, options);
        closeQuietly(fd);
        if (++hops > maxSymlinkHops)
          throw new WorkspaceError("invalid_path", `Too many symbolic links on the way to "${shorten(options.shown)}".`);
        const target = readLinkText(top, component);
        if (target === null) {
          // Replaced between the open and the readlink: look at the component again.
          queue.unshift(component);
          continue;
        }
        if (target.startsWith("/")) {
          const inside = relativeInside(rootPath, target);
          if (inside === null) throw outside(options.shown, "leads outside the workspace through a symbolic link");
          closeStack();
          queue.unshift(...inside);
        } else {
          queue.unshift(...target.split("/").filter((part) => part !== "" && part !== "."));
        }
        continue;
      }
      const entry: HeldEntry = { fd, stats, components: [...top.components, component] };
      if (last) return finish(stack, top, component, entry, options);
      if (!stats.isDirectory()) {
        closeQuietly(fd);
        throw new WorkspaceError(
          "not_a_directory",
          `"${entry.components.join("/")}" is not a folder, on the way to "${shorten(options.shown)}".`,
        );
      }
      stack.push(entry);
    }
  } catch (error) {
    closeStack();
    throw error;
  }
}

/** Where a walk that creates every remaining folder ends: `..` among new folders pops them as text. */
function predictPath(created: string[], remaining: readonly string[]): string[] {
  const result = [...created];
  for (const part of remaining) part === ".." ? result.pop() : result.push(part);
  return result;
}

function rootResolution(root: HeldEntry, options: ResolveOptions): Resolution {
  options.inspect?.([]);
  return { parent: null, name: null, target: root, components: [], close: () => {} };
}

/** Keeps the parent and the target open; closes the rest of the stack. */
function finish(stack: HeldEntry[], parent: HeldEntry, name: string, target: HeldEntry | null, options: ResolveOptions): Resolution {
  options.inspect?.(stack);
  for (const entry of stack.slice(1)) if (entry !== parent) closeQuietly(entry.fd);
  const ownsParent = parent !== stack[0];
  return {
    parent,
    name,
    target,
    components: [...parent.components, name],
    close() {
      if (target) closeQuietly(target.fd);
      if (ownsParent) closeQuietly(parent.fd);
    },
  };
}

/** Opens `name` in `folder` as itself; null when nothing is there. */
function openEntry(folder: HeldEntry, name: string, shown: string): number | null {
  try {
    return openSync(viaDescriptor(folder.fd, name), O_PATH | O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    if (code === "ENAMETOOLONG") throw new WorkspaceError("invalid_path", `A name in "${shorten(shown)}" is too long.`);
    if (code === "ENOTDIR")
      throw new WorkspaceError("not_a_directory", `"${folder.components.join("/")}" is not a folder, on the way to "${shorten(shown)}".`);
    throw new WorkspaceError("io_failed", `Could not open "${shorten(shown)}": ${code ?? (error as Error).message}.`);
  }
}

function makeFolder(folder: HeldEntry, name: string, owner: { uid: number; gid: number }, shown: string): number {
  const at = viaDescriptor(folder.fd, name);
  try {
    mkdirSync(at, 0o755);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST")
      throw new WorkspaceError("io_failed", `Could not create a folder for "${shorten(shown)}": ${(error as NodeJS.ErrnoException).code}.`);
  }
  const fd = openSync(at, O_PATH | O_NOFOLLOW);
  const stats = fstatSync(fd);
  if (stats.isDirectory() && stats.uid !== owner.uid) giveTo(fd, owner);
  return fd;
}

/**
 * Hands a new entry to the workspace's owner (the tenant's tool identity). An
 * `O_PATH` descriptor refuses fchown, so this goes through its magic link,
 * which chown follows to the object held. A service that is not root cannot,
 * and need not: it is then the workspace's owner itself.
 */
function giveTo(fd: number, owner: { uid: number; gid: number }): void {
  try {
    chownSync(viaDescriptor(fd), owner.uid, owner.gid);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") throw error;
  }
}

function readLinkText(folder: HeldEntry, name: string): string | null {
  try {
    return readlinkSync(viaDescriptor(folder.fd, name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EINVAL" || (error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

function outside(shown: string, how: string): WorkspaceError {
  return new WorkspaceError("path_outside_workspace", `The path "${shorten(shown)}" ${how}; only the workspace is reachable.`);
}

/** Opens the held root of a workspace (its path is the server's, never a model's). */
export function holdRoot(rootPath: string): HeldEntry {
  let fd: number;
  try {
    fd = openSync(rootPath, O_PATH | O_DIRECTORY);
  } catch (error) {
    throw new WorkspaceError(
      "io_failed",
      `The workspace folder cannot be opened: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`,
    );
  }
  return { fd, stats: fstatSync(fd), components: [] };
}
