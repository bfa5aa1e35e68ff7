import { chmod, lstat, mkdir, readdir, realpath, stat, unlink } from "node:fs/promises";
import path from "node:path";
import { holdRoot, closeQuietly } from "./descriptor-walk.js";
import { openWorkspaceFiles } from "./open-workspace-files.js";
import { projectTrashRoot } from "./project-trash.js";
import type { WorkspaceFiles } from "./workspace-files.js";
import { chownTree } from "./workspace-tree.js";
import type { ProcessIdentity } from "../core/process-identity.js";

/**
 * Where workspaces live on a host (SPEC S6, S7):
 *
 *     <workspaces>/                 0711 root      others may pass, not list
 *     <workspaces>/.trash-staging/  0700 root      removed entries on their way to their project's trash, and
 *                                                  files a door write renames into place (`write-<uuid>`)
 *     <workspaces>/.trash/<tenant>/<project>/  0700 root  the project's trash (project-trash.ts)
 *     <workspaces>/<tenant>/        0711 root
 *     <workspaces>/<tenant>/<project>/  0700, owned by the tenant's tool uid
 *
 * A tenant's processes reach their own workspace (bwrap binds it as that uid)
 * and nothing else: no listing of tenants or projects, no entry into another
 * uid's workspace. A planted setuid file is the tenant's own, in a folder no
 * one else can enter.
 */
const trashStagingName = ".trash-staging";

/** The workspace door of a project, with the host's trash staging folder and the project's trash. */
export function projectWorkspaceFiles(workspacesDir: string, workspacePath: string): WorkspaceFiles {
  return openWorkspaceFiles({
    root: workspacePath,
    trashStaging: path.join(workspacesDir, trashStagingName),
    trash: projectTrashRoot(workspacesDir, workspacePath),
  });
}

/**
 * Removes what door writes killed before their rename left in the staging folder (`write-<uuid>`,
 * `open-workspace-files.ts`), once older than `olderThanMs` (a live write takes milliseconds);
 * answers how many went. Run at a worker's start: such files come from a crash.
 */
export async function removeStaleWrites(workspacesDir: string, olderThanMs = 3_600_000): Promise<number> {
  const staging = path.join(workspacesDir, trashStagingName);
  const names = await readdir(staging).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names.filter((entry) => entry.startsWith("write-"))) {
    const at = path.join(staging, name);
    const entry = await lstat(at).catch(() => null);
    if (!entry?.isFile() || Date.now() - entry.mtimeMs < olderThanMs) continue;
    await unlink(at).then(
      () => removed++,
      () => undefined,
    );
  }
  return removed;
}

/** Creates a project's (or a tenant-wide MCP server's) workspace folder, private to the tenant's uid; answers its real path. */
export async function createWorkspaceFolder(workspacesDir: string, relative: readonly string[], owner: ProcessIdentity): Promise<string> {
  await ensurePassable(workspacesDir);
  let folder = workspacesDir;
  for (const part of relative.slice(0, -1)) {
    folder = path.join(folder, part);
    await ensurePassable(folder);
  }
  const workspace = path.join(folder, relative[relative.length - 1] as string);
  await mkdir(workspace, { recursive: true, mode: 0o700 });
  await handOver(workspace, owner);
  return realpath(workspace);
}

/**
 * Makes sure a workspace belongs to the tenant's uid, once per process and
 * workspace: a workspace made before tools stepped down from root (or under
 * another uid base) is handed over whole, links never followed.
 */
export interface WorkspaceOwnership {
  ensure(workspacePath: string, owner: ProcessIdentity): Promise<void>;
}

export function createWorkspaceOwnership(): WorkspaceOwnership {
  const settled = new Map<string, number>();
  return {
    async ensure(workspacePath, owner) {
      if (settled.get(workspacePath) === owner.uid) return;
      const current = await stat(workspacePath);
      if (current.uid !== owner.uid || current.gid !== owner.gid || (current.mode & 0o777) !== 0o700) await handOver(workspacePath, owner);
      if (settled.size > 10_000) settled.clear();
      settled.set(workspacePath, owner.uid);
    },
  };
}

async function handOver(workspace: string, owner: ProcessIdentity): Promise<void> {
  if (process.getuid?.() !== 0) {
    await chmod(workspace, 0o700);
    return;
  }
  const current = await stat(workspace);
  if (current.uid !== owner.uid || current.gid !== owner.gid) {
    const root = holdRoot(workspace);
    try {
      await chownTree(root, owner);
    } finally {
      closeQuietly(root.fd);
    }
  }
  await chmod(workspace, 0o700);
}

/** A host's workspace root, made when missing: tenants' processes pass through it to their own workspace. */
export async function prepareHostRoot(workspacesDir: string): Promise<void> {
  await ensurePassable(workspacesDir);
}

/** A folder above workspaces: others may pass through it (to reach their own workspace) but not list it. */
async function ensurePassable(folder: string): Promise<void> {
  await mkdir(folder, { recursive: true, mode: 0o711 });
  const current = await stat(folder);
  const own = current.uid === (process.getuid?.() ?? -1);
  if (own && (current.mode & 0o777) !== 0o711) await chmod(folder, 0o711);
}
