import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
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
import { hostname } from "node:os";
import path from "node:path";
import { findExecutable } from "../find-executable.js";
import { overlayOptions, overlayWrap, type OverlayFolders } from "./overlay-mount.js";

/**
 * The folders of layered calls (SPEC X7): `<workspaces>/.calls/<id>/{upper,work}`,
 * root's and mode 0700, hidden from every sandbox with the rest of the
 * workspaces folder, and on the workspaces' own file system, so applying a
 * call's changes is a rename. `meta.json` says whose call it is and which
 * process runs it: a folder whose process is gone is an interrupted call's,
 * rolled forward by the next worker on the host (`roll-forward-layers.ts`).
 */

/** Who a layered call belongs to: enough to record its changes when its own worker died. */
export interface CallLayerOwner {
  tenantId: string;
  sessionId: string;
  runId: string;
  toolCallId: string;
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

export interface CallLayers {
  readonly root: string;
  /** Makes one call's folders, upper owned like the workspace; null when this workspace cannot be layered (another file system). */
  open(workspaceDir: string, owner: CallLayerOwner): CallLayer | null;
  /** Removes a call's folders once applied; off the call's path. */
  discard(layer: Pick<CallLayer, "dir">): void;
  /** Folders whose process is gone: interrupted calls to roll forward. */
  orphans(): Array<{ dir: string; meta: CallLayerMeta | null }>;
  /**
   * Takes an orphan for this process, by renaming it (only one of the workers
   * of a host racing for it wins); answers its new folder, or null if another
   * took it. A claim whose process died too is an orphan again.
   */
  claim(dir: string): string | null;
}

export type CallLayerSupport = { ok: true; layers: CallLayers } | { ok: false; reason: string };

const layersFolderName = ".calls";
/** The suffix a worker rolling a layer forward gives its folder: its pid and start time. */
const claimPattern = /\.claimed-(\d+)-(\d+)$/;

function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 22, counted after the command name's closing parenthesis (the name may hold spaces).
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
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
  const ensureRoot = () => {
    if (!existsSync(root)) mkdirSync(root, { recursive: true, mode: 0o700 });
  };
  return {
    ok: true,
    layers: {
      root,
      open(workspaceDir, owner) {
        ensureRoot();
        const workspace = statSync(workspaceDir);
        if (statSync(root).dev !== workspace.dev) return null;
        const dir = path.join(root, `${Date.now().toString(36)}-${randomBytes(6).toString("hex")}`);
        const folders = { upperDir: path.join(dir, "upper"), workDir: path.join(dir, "work") };
        mkdirSync(dir, { mode: 0o700 });
        mkdirSync(folders.upperDir);
        mkdirSync(folders.workDir, { mode: 0o700 });
        // The overlay's root takes upper's owner and mode: the workspace's, or the tenant could not write to it.
        chownSync(folders.upperDir, workspace.uid, workspace.gid);
        chmodSync(folders.upperDir, workspace.mode & 0o7777);
        const meta: CallLayerMeta = { ...owner, workspaceDir, ...self, createdAt: new Date().toISOString() };
        writeFileSync(path.join(dir, "meta.json"), JSON.stringify(meta));
        return { dir, folders, meta, startedAtMs: Date.now() };
      },
      discard(layer) {
        void rm(layer.dir, { recursive: true, force: true }).catch(() => {});
      },
      claim(dir) {
        const claimed = `${dir.replace(claimPattern, "")}.claimed-${self.pid}-${self.processStart}`;
        try {
          renameSync(dir, claimed);
          return claimed;
        } catch {
          return null;
        }
      },
      orphans() {
        let names: string[];
        try {
          names = readdirSync(root);
        } catch {
          return [];
        }
        const found: Array<{ dir: string; meta: CallLayerMeta | null }> = [];
        for (const name of names) {
          const dir = path.join(root, name);
          let meta: CallLayerMeta | null = null;
          try {
            meta = JSON.parse(readFileSync(path.join(dir, "meta.json"), "utf8")) as CallLayerMeta;
          } catch {
            // a folder without its record: made by a worker that died before writing it; nothing ran in it
          }
          if (meta && meta.host !== self.host) continue;
          const claimed = claimPattern.exec(name);
          // Claimed by a worker rolling it forward now, or still running its command: not an orphan.
          if (claimed ? processStart(Number(claimed[1])) === claimed[2] : meta && processStart(meta.pid) === meta.processStart) continue;
          found.push({ dir, meta });
        }
        return found;
      },
    },
  };
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

/** Removes a folder left by a call that never started (no record): nothing in it was ever visible. */
export function removeLayerNow(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
