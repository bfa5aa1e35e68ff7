import { execFileSync } from "node:child_process";
import { processStart } from "../../processes/process-start.js";
import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { rm } from "node:fs/promises";
import { runChild } from "../../processes/start-child.js";
import { hostname } from "node:os";
import path from "node:path";
import { findExecutable } from "../find-executable.js";
import { isDoorJournal } from "./layer-journal.js";
import { overlayOptions, overlayWrap, type OverlayFolders } from "./overlay-mount.js";
import type { CallId, RunId, SessionId, TenantId } from "../../ids.js";

/**
 * The folders of layered calls (SPEC X7): `<workspaces>/.calls/<id>/{upper,work}`,
 * root's and mode 0700, hidden from every sandbox with the rest of the
 * workspaces folder, and on the workspaces' own file system, so applying a
 * call's changes is a rename. `meta.json` says whose call it is and which
 * process runs it: a folder whose process is gone is an interrupted call's,
 * settled (`roll-forward-layers.ts`) before any later call of its project runs.
 *
 * A folder's name starts with its workspace's key, so the layers of one project
 * are found by name alone, then the time it was made (layers of a project settle
 * in the order their calls ran). A suffix tells its state:
 *
 *     <key>-<time>-<random>                       its call's command runs (or ran) in the process named in meta.json
 *     <key>-<time>-<random>.released              its own process could not settle it: any worker of the host may
 *     <key>-<time>-<random>.claimed-<pid>-<start> a worker is settling it now
 */

/** Who a layered call belongs to: enough to record its changes when its own worker died. */
export interface CallLayerOwner {
  tenantId: TenantId;
  sessionId: SessionId;
  runId: RunId;
  toolCallId: CallId;
}

export interface CallLayerMeta extends CallLayerOwner {
  workspaceDir: string;
  host: string;
  pid: number;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat): a reused pid does not pass for it. */
  processStart: string;
  createdAt: string;
}

export interface CallLayer {
  dir: string;
  folders: OverlayFolders;
  meta: CallLayerMeta;
  /** Just before the command started: a workspace entry changed since was changed by someone else (a conflict). */
  startedAtMs: number;
}

/**
 * A layer found on this host: `running` while the process that started its command lives (its
 * own call settles it), `orphan` when that process is gone or gave it up (interrupted: to be
 * settled), `settling` while a live worker settles it.
 */
export interface FoundLayer {
  dir: string;
  meta: CallLayerMeta | null;
  state: "running" | "orphan" | "settling";
}

export interface CallLayers {
  readonly root: string;
  /** Makes one call's folders, upper owned like the workspace; null when this workspace cannot be layered (another file system). */
  open(workspaceDir: string, owner: CallLayerOwner): CallLayer | null;
  /**
   * Makes a door write's journal folder (`door-journal.ts`): no upper, settled like a layer (its
   * records stored if its version was placed); null when it cannot be on the workspace's file system.
   */
  openJournal(workspaceDir: string, owner: CallLayerOwner): string | null;
  /** Removes a call's folders once applied; off the call's path. */
  discard(layer: Pick<CallLayer, "dir">): void;
  /**
   * Keeps an applied layer, with its records (`layer-journal.ts`), until its call's result is
   * stored: a worker killed before that leaves it to roll forward, which stores the records.
   */
  hold(toolCallId: CallId, layer: Pick<CallLayer, "dir">): void;
  /** The call's result, with its records, is stored: its held layers go. */
  recorded(toolCallId: CallId): void;
  /** The call's result could not be stored: its held layers are given up for a roll-forward to store their records. */
  giveUp(toolCallId: CallId): void;
  /** Gives a layer of this process up for any worker of the host to settle (its own settle failed). */
  release(dir: string): void;
  /** Counts one failed attempt to settle a layer, in its folder; answers the count so far. */
  countFailure(dir: string): number;
  /** The layers of one workspace on this host, oldest first. */
  ofWorkspace(workspaceDir: string): FoundLayer[];
  /** Folders whose process is gone, of every workspace, oldest first: interrupted calls to settle. */
  orphans(): FoundLayer[];
  /**
   * Takes an orphan for this process, by renaming it (only one of the workers
   * of a host racing for it wins); answers its new folder, or null if another
   * took it. A claim whose process died too is an orphan again.
   */
  claim(dir: string): string | null;
}

export type CallLayerSupport = { ok: true; layers: CallLayers } | { ok: false; reason: string };

const layersFolderName = ".calls";
/** The suffix a worker settling a layer gives its folder: its pid and start time. */
const claimPattern = /\.claimed-(\d+)-(\d+)$/;
const releasedSuffix = ".released";
/** Any state suffix, to find a folder's base name. */
const suffixPattern = /(\.claimed-\d+-\d+|\.released)$/;

/** The key that starts the names of a workspace's layers: a digest of its path (names are not paths). */
function workspaceKey(workspaceDir: string): string {
  return createHash("sha256").update(workspaceDir).digest("hex").slice(0, 16);
}

/**
 * Whether this worker can layer calls: root (the overlay is mounted in the
 * initial user namespace, where files of any owner can be copied up), a kernel
 * with overlayfs, and util-linux's unshare and mount. Otherwise shell changes
 * are not recorded, and the reason is logged.
 */
export function createCallLayers(options: { workspacesDir: string; searchPath: string }): CallLayerSupport {
  if (process.getuid?.() !== 0)
    return { ok: false, reason: "the worker does not run as root, and only root mounts the overlay that records a command's changes" };
  let filesystems = "";
  try {
    filesystems = readFileSync("/proc/filesystems", "utf8");
  } catch {
    // unknown: treated as absent
  }
  if (!/\toverlay$/m.test(filesystems)) return { ok: false, reason: "the kernel has no overlay file system (modprobe overlay)" };
  for (const program of ["unshare", "mount", "sh"]) {
    if (!findExecutable(program, options.searchPath))
      return { ok: false, reason: `${program} is not installed (Debian packages util-linux, mount)` };
  }
  const root = path.join(options.workspacesDir, layersFolderName);
  const failed = probeOverlay(root, options.searchPath);
  if (failed) return { ok: false, reason: failed };
  const self = { host: hostname(), pid: process.pid, processStart: processStart(process.pid) ?? "" };
  /** Applied layers of this process, by call, waiting for their result to be stored. */
  const held = new Map<CallId, string[]>();
  const takeHeld = (toolCallId: CallId) => {
    const dirs = held.get(toolCallId) ?? [];
    held.delete(toolCallId);
    return dirs;
  };
  const release = (dir: string) => {
    try {
      renameSync(dir, `${dir.replace(suffixPattern, "")}${releasedSuffix}`);
    } catch {
      // gone already: settled by another path
    }
  };
  const ensureRoot = () => {
    if (!existsSync(root)) mkdirSync(root, { recursive: true, mode: 0o700 });
  };
  /** A call's folder, named so a project's folders sort in the order they were made; null on another file system than the workspace. */
  const makeFolder = (workspaceDir: string, owner: CallLayerOwner) => {
    ensureRoot();
    const workspace = statSync(workspaceDir);
    if (statSync(root).dev !== workspace.dev) return null;
    // Fixed width, so names sort by time.
    const dir = path.join(
      root,
      `${workspaceKey(workspaceDir)}-${Date.now().toString(36).padStart(10, "0")}-${randomBytes(6).toString("hex")}`,
    );
    mkdirSync(dir, { mode: 0o700 });
    const meta: CallLayerMeta = { ...owner, workspaceDir, ...self, createdAt: new Date().toISOString() };
    return { dir, meta, workspace };
  };
  /** Written last: a folder without it is taken for one whose worker died before anything ran in it. */
  const writeMeta = (dir: string, meta: CallLayerMeta) => writeFileSync(path.join(dir, "meta.json"), JSON.stringify(meta));
  return {
    ok: true,
    layers: {
      root,
      open(workspaceDir, owner) {
        const made = makeFolder(workspaceDir, owner);
        if (!made) return null;
        const { dir, meta, workspace } = made;
        const folders = { upperDir: path.join(dir, "upper"), workDir: path.join(dir, "work") };
        mkdirSync(folders.upperDir);
        mkdirSync(folders.workDir, { mode: 0o700 });
        // The overlay's root takes upper's owner and mode: the workspace's, or the tenant could not write to it.
        chownSync(folders.upperDir, workspace.uid, workspace.gid);
        chmodSync(folders.upperDir, workspace.mode & 0o7777);
        writeMeta(dir, meta);
        return { dir, folders, meta, startedAtMs: Date.now() };
      },
      openJournal(workspaceDir, owner) {
        const made = makeFolder(workspaceDir, owner);
        if (!made) return null;
        writeMeta(made.dir, made.meta);
        return made.dir;
      },
      discard(layer) {
        void removeLayerFolder(layer.dir).catch(() => {});
      },
      hold(toolCallId, layer) {
        held.set(toolCallId, [...(held.get(toolCallId) ?? []), layer.dir]);
      },
      recorded(toolCallId) {
        for (const dir of takeHeld(toolCallId)) void removeLayerFolder(dir).catch(() => {});
      },
      giveUp(toolCallId) {
        for (const dir of takeHeld(toolCallId)) release(dir);
      },
      countFailure(dir) {
        const file = path.join(dir, "attempts");
        let attempts = 0;
        try {
          attempts = Number(readFileSync(file, "utf8")) || 0;
        } catch {
          // the first failure
        }
        try {
          writeFileSync(file, String(attempts + 1));
        } catch {
          // the folder went meanwhile
        }
        return attempts + 1;
      },
      release,
      claim(dir) {
        const claimed = `${dir.replace(suffixPattern, "")}.claimed-${self.pid}-${self.processStart}`;
        try {
          renameSync(dir, claimed);
          return claimed;
        } catch {
          return null;
        }
      },
      ofWorkspace(workspaceDir) {
        const key = `${workspaceKey(workspaceDir)}-`;
        return found((name) => name.startsWith(key)).filter((layer) => layer.meta === null || layer.meta.workspaceDir === workspaceDir);
      },
      orphans() {
        return found(() => true).filter((layer) => layer.state === "orphan");
      },
    },
  };

  /** The layers of this host whose folder name passes `wanted`, oldest first, with their state. */
  function found(wanted: (name: string) => boolean): FoundLayer[] {
    let names: string[];
    try {
      names = readdirSync(root);
    } catch {
      return [];
    }
    const layers: FoundLayer[] = [];
    for (const name of names.filter(wanted).sort()) {
      if (name.startsWith(".probe-")) continue;
      const dir = path.join(root, name);
      let meta: CallLayerMeta | null = null;
      try {
        meta = JSON.parse(readFileSync(path.join(dir, "meta.json"), "utf8")) as CallLayerMeta;
      } catch {
        // a folder without its record: made by a worker that died before writing it; nothing ran in it
      }
      if (meta && meta.host !== self.host) continue;
      const claimed = claimPattern.exec(name);
      const state: FoundLayer["state"] = claimed
        ? processStart(Number(claimed[1])) === claimed[2]
          ? "settling"
          : "orphan"
        : name.endsWith(releasedSuffix) || !meta || processStart(meta.pid) !== meta.processStart
          ? "orphan"
          : "running";
      layers.push({ dir, meta, state });
    }
    return layers;
  }
}

/** Whether a layer's workspace is still there (its project may have been deleted while the command ran). */
export function workspaceExists(workspaceDir: string): boolean {
  return existsSync(workspaceDir);
}

/**
 * Mounts one overlay the way calls will, on a scratch folder beside theirs, and answers why
 * it failed (null when it worked): a container without CAP_SYS_ADMIN, or workspaces on a file
 * system overlayfs cannot use as its upper layer, is found at start-up, not by every call.
 */
function probeOverlay(root: string, searchPath: string): string | null {
  const [unshare, mount, sh] = ["unshare", "mount", "sh"].map((program) => findExecutable(program, searchPath)) as [string, string, string];
  const probe = path.join(root, `.probe-${process.pid}-${randomBytes(4).toString("hex")}`);
  try {
    mkdirSync(root, { recursive: true, mode: 0o700 });
    for (const folder of ["lower", "upper", "work"]) mkdirSync(path.join(probe, folder), { recursive: true, mode: 0o700 });
    const options = overlayOptions(path.join(probe, "lower"), { upperDir: path.join(probe, "upper"), workDir: path.join(probe, "work") });
    if (!options) return `the workspaces folder ${root} holds a character overlayfs options cannot carry`;
    const [file, ...args] = [...overlayWrap({ unshare, mount, sh }, path.join(probe, "lower"), options), "true"];
    execFileSync(file as string, args, { stdio: "pipe", timeout: 10_000 });
    return null;
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return `an overlay could not be mounted over the workspaces folder (${stderr || (error as Error).message}); in a container, grant CAP_SYS_ADMIN and keep the workspaces on a volume, not on the container's own overlay file system`;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/**
 * Removes a layer's folder once it was settled (or was never used). GNU `rm -rf` walks by
 * descriptor: a layer can hold a tree deeper than any path can name, where a walk by path
 * (node's own `rm`) fails with ENAMETOOLONG and would keep the layer for ever.
 */
export async function removeLayerFolder(dir: string): Promise<void> {
  // A door write's journal holds a few flat files: no process for it.
  if (isDoorJournal(dir)) {
    await rm(dir, { recursive: true, force: true });
    return;
  }
  const { end, stderr } = await runChild("rm", ["-rf", "--one-file-system", "--", dir], {});
  if (end.kind === "not_started") throw end.error;
  if (end.exitCode !== 0) throw new Error(`rm could not remove ${dir}: ${stderr.trim() || `exit ${end.exitCode}`}`);
}
