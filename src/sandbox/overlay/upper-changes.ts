import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync, type Stats } from "node:fs";
import { open } from "node:fs/promises";
import path from "node:path";
import { getAttributeSync } from "@napi-rs/xattr";
import { viaDescriptor } from "../../workspace/descriptor-walk.js";
import type { FileSnapshot } from "../../workspace/workspace-files.js";
import type { StrictFolders } from "./strict-folders.js";

/**
 * What a layered call changed (SPEC X7), read from its overlay's upper folder
 * once the command has ended, against the workspace as it is now:
 *
 * - a whiteout (character device 0,0) removes the workspace entry of its name;
 * - a folder that also exists in the workspace merges into it, unless the
 *   overlay marked it opaque (removed and made again during the call): then,
 *   like a folder the workspace lacks, it replaces whatever is there, whole;
 * - any other entry replaces the workspace entry of its name.
 *
 * The answer is both the plan to apply (`apply-upper.ts`) and the per-file
 * before/after of the changes, read before anything moves. Whatever the apply
 * removes goes to the project's trash whole, so even what is not recorded per
 * file (past the limits below, or under `.git` and `node_modules`) can be
 * brought back.
 */

export interface LayerLimits {
  /** Files recorded per call; the rest are counted. */
  maxFiles: number;
  /** Bytes of content read for the records of one call (before and after). */
  maxBytes: number;
  /** Largest single version kept (the blob store's limit). */
  maxFileBytes: number;
}

export interface RecordedFile {
  path: string;
  before: FileSnapshot;
  after: FileSnapshot;
}

export interface LayerPlan {
  /** Workspace entries moved to the trash before anything is placed, shallowest first. */
  removals: string[][];
  /** Whiteouts inside folders that move whole: deleted first, so no device node reaches the workspace. */
  strayWhiteouts: string[];
  /** Workspace folders whose mode the call changed. */
  modes: Array<{ components: string[]; mode: number }>;
  /** Upper entries renamed into the workspace, in apply order. */
  moves: Array<{ components: string[]; hostPath: string }>;
  /** Per-file changes with both contents, for the records. */
  files: RecordedFile[];
  /** Changed files not recorded one by one: under .git or node_modules, or past the limits. */
  summarized: { files: number; roots: string[]; overLimit: number };
  /** Workspace entries the call replaces that someone else changed while it ran. */
  conflicts: string[];
}

type UpperKind = "whiteout" | "file" | "symlink" | "dir" | "special";

interface UpperNode {
  name: string;
  hostPath: string;
  stats: Stats;
  kind: UpperKind;
  /** The workspace entry of the same path, when its parent folder is a real folder of the workspace. */
  workspace: Stats | null;
  children: UpperNode[];
}

const summarizedNames = new Set([".git", "node_modules"]);
const isSummarized = (components: readonly string[]) => components.some((name) => summarizedNames.has(name));

function kindOf(stats: Stats): UpperKind {
  if (stats.isCharacterDevice() && stats.rdev === 0) return "whiteout";
  if (stats.isDirectory()) return "dir";
  if (stats.isFile()) return "file";
  if (stats.isSymbolicLink()) return "symlink";
  return "special";
}

/** Reads the upper folder, pairing each entry with the workspace entry of its path. */
function scan(hostPath: string, components: string[], folders: StrictFolders, workspaceFolder: number | null): UpperNode[] {
  const nodes: UpperNode[] = [];
  for (const name of readdirSync(hostPath)) {
    const inner = path.join(hostPath, name);
    const stats = lstatSync(inner);
    const kind = kindOf(stats);
    const workspace = workspaceFolder === null ? null : folders.entry(workspaceFolder, name);
    const own = [...components, name];
    const children = kind === "dir" ? scan(inner, own, folders, workspace?.isDirectory() ? folders.folder(own) : null) : [];
    nodes.push({ name, hostPath: inner, stats, kind, workspace, children });
  }
  return nodes;
}

/** Folders the overlay marked opaque (`trusted.overlay.opaque`), among `dirs`; about 10 µs each. */
function opaqueFolders(dirs: readonly string[]): Set<string> {
  const opaque = new Set<string>();
  for (const dir of dirs) if (getAttributeSync(dir, "trusted.overlay.opaque")?.toString("latin1") === "y") opaque.add(dir);
  return opaque;
}

function collectDirs(nodes: readonly UpperNode[], into: string[]): string[] {
  for (const node of nodes) {
    if (node.kind !== "dir") continue;
    // Only a folder the workspace also has can be either merged or opaque; any other replaces what is there.
    if (node.workspace?.isDirectory()) into.push(node.hostPath);
    collectDirs(node.children, into);
  }
  return into;
}

/** `git` writes objects before the index and refs that name them: so does the apply, so a crash halfway leaves a consistent repository. */
function applyRank(components: readonly string[]): number {
  const git = components.indexOf(".git");
  if (git < 0) return 0;
  return components[git + 1] === "objects" ? 1 : 2;
}

/** `replaced`: a workspace file the move will rename over, which only its record keeps (one inside a removed folder goes to the trash with it). */
type Before = { from: "workspace"; stats: Stats; replaced: boolean } | { from: "absent" };
interface Pending {
  components: string[];
  before: Before;
  after: { hostPath: string; stats: Stats } | null;
}

export async function planLayer(input: {
  upperDir: string;
  folders: StrictFolders;
  startedAtMs: number;
  limits: LayerLimits;
}): Promise<LayerPlan> {
  const { folders, limits } = input;
  const tree = scan(input.upperDir, [], folders, folders.folder([]));
  const opaque = opaqueFolders(collectDirs(tree, []));

  const plan: LayerPlan = {
    removals: [],
    strayWhiteouts: [],
    modes: [],
    moves: [],
    files: [],
    summarized: { files: 0, roots: [], overLimit: 0 },
    conflicts: [],
  };
  const pending = new Map<string, Pending>();
  const roots = new Set<string>();
  const summarize = (components: readonly string[]) => {
    plan.summarized.files++;
    const at = components.findIndex((name) => summarizedNames.has(name));
    roots.add(components.slice(0, at + 1).join("/"));
  };
  const noteConflict = (components: readonly string[], stats: Stats) => {
    if (stats.ctimeMs >= input.startedAtMs) plan.conflicts.push(components.join("/"));
  };
  const setAfter = (components: string[], after: Pending["after"]) => {
    if (isSummarized(components)) return summarize(components);
    const key = components.join("/");
    const known = pending.get(key);
    if (known) known.after = after;
    else pending.set(key, { components, before: { from: "absent" }, after });
  };

  /** The workspace files below a removed entry, each recorded as deleted. */
  const enumerateRemoved = (components: string[], stats: Stats) => {
    if (isSummarized(components)) {
      if (stats.isFile()) summarize(components);
      else roots.add(components.slice(0, components.findIndex((name) => summarizedNames.has(name)) + 1).join("/"));
      return;
    }
    if (stats.isFile()) {
      pending.set(components.join("/"), { components, before: { from: "workspace", stats, replaced: false }, after: null });
      return;
    }
    if (!stats.isDirectory()) return;
    const fd = folders.folder(components);
    if (fd === null) return;
    let names: string[];
    try {
      names = readdirSync(viaDescriptor(fd));
    } catch {
      return;
    }
    for (const name of names) {
      const child = folders.entry(fd, name);
      if (child) enumerateRemoved([...components, name], child);
    }
  };
  const remove = (components: string[], stats: Stats) => {
    noteConflict(components, stats);
    plan.removals.push(components);
    enumerateRemoved(components, stats);
  };
  /** Everything inside a folder that moves whole is new at its path. */
  const collectNew = (nodes: readonly UpperNode[], components: string[]) => {
    for (const node of nodes) {
      const own = [...components, node.name];
      if (node.kind === "whiteout") plan.strayWhiteouts.push(node.hostPath);
      else if (node.kind === "dir") collectNew(node.children, own);
      else if (node.kind === "file") setAfter(own, { hostPath: node.hostPath, stats: node.stats });
    }
  };
  const visit = (nodes: readonly UpperNode[], components: string[]) => {
    for (const node of nodes) {
      const own = [...components, node.name];
      const there = node.workspace;
      if (node.kind === "whiteout") {
        if (there) remove(own, there);
        continue;
      }
      if (node.kind === "dir" && there?.isDirectory() && !opaque.has(node.hostPath)) {
        if ((there.mode & 0o7777) !== (node.stats.mode & 0o7777)) plan.modes.push({ components: own, mode: node.stats.mode & 0o7777 });
        visit(node.children, own);
        continue;
      }
      if (node.kind === "dir") {
        if (there) remove(own, there);
        plan.moves.push({ components: own, hostPath: node.hostPath });
        collectNew(node.children, own);
        continue;
      }
      // A file, symlink or special entry replaces the workspace's. A replaced file is kept by its
      // record; anything else (a folder, a symlink, a file too large to record) goes to the trash first.
      if (there) {
        const summarized = isSummarized(own);
        if (!(there.isFile() && node.kind === "file" && (summarized || there.size <= limits.maxFileBytes))) remove(own, there);
        else {
          noteConflict(own, there);
          if (!summarized)
            pending.set(own.join("/"), { components: own, before: { from: "workspace", stats: there, replaced: true }, after: null });
        }
      }
      plan.moves.push({ components: own, hostPath: node.hostPath });
      if (node.kind === "file") setAfter(own, { hostPath: node.hostPath, stats: node.stats });
    }
  };
  visit(tree, []);
  plan.moves.sort((a, b) => applyRank(a.components) - applyRank(b.components));
  plan.summarized.roots = [...roots].sort();

  // The contents, read now: the apply is about to move the upper files and trash the workspace's.
  let budget = limits.maxBytes;
  const unrecorded = (change: Pending) => {
    plan.summarized.overLimit++;
    // A file the move would rename over, kept by no record: the trash keeps it instead.
    if (change.before.from === "workspace" && change.before.replaced) plan.removals.push(change.components);
  };
  for (const change of pending.values()) {
    if (plan.files.length >= limits.maxFiles) {
      unrecorded(change);
      continue;
    }
    const beforeSize = change.before.from === "workspace" ? change.before.stats.size : 0;
    const afterSize = change.after?.stats.size ?? 0;
    if (beforeSize > limits.maxFileBytes || afterSize > limits.maxFileBytes || beforeSize + afterSize > budget) {
      unrecorded(change);
      continue;
    }
    const before = change.before.from === "workspace" ? await readWorkspaceFile(folders, change.components) : ({ kind: "absent" } as const);
    const after = change.after ? await readPlain(change.after.hostPath) : ({ kind: "absent" } as const);
    if (before === null || after === null) {
      unrecorded(change);
      continue;
    }
    budget -= beforeSize + afterSize;
    // Opened for writing and closed, or touched: same content and mode is no change.
    if (before.kind === "file" && after.kind === "file" && before.mode === after.mode && before.content.equals(after.content)) continue;
    plan.files.push({ path: change.components.join("/"), before, after });
  }
  plan.removals.sort((a, b) => a.length - b.length);
  return plan;
}

const readFlags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** A workspace file through its held folder, never a symlink; null if it is no longer a plain file. */
async function readWorkspaceFile(folders: StrictFolders, components: readonly string[]): Promise<FileSnapshot | null> {
  const fd = folders.folder(components.slice(0, -1));
  if (fd === null) return null;
  return readPlain(viaDescriptor(fd, components[components.length - 1] as string));
}

/** Up to this size a file is read synchronously: a few local syscalls cost less than trips through libuv's thread pool. */
const syncReadBytes = 1024 * 1024;

async function readPlain(at: string): Promise<FileSnapshot | null> {
  let fd: number;
  try {
    fd = openSync(at, readFlags);
  } catch {
    return null;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return null;
    const mode = stats.mode & 0o7777;
    if (stats.size <= syncReadBytes) return { kind: "file", content: readFileSync(fd), mode };
    const handle = await open(viaDescriptor(fd), readFlags);
    try {
      return { kind: "file", content: await handle.readFile(), mode };
    } finally {
      await handle.close();
    }
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
