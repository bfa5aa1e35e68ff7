import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, readdir, rename, stat, unlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { removeTreeGradually } from "./remove-tree.js";
import type { ProjectId, TenantId } from "../ids.js";

/**
 * A host's copies of the workspaces placed on it (SPEC W3). Each copy has a marker,
 * `<root>/.placements/<tenant>/<project>`, holding the placement epoch it belongs to and touched
 * at every batch (its age orders evictions). A copy whose marker names another epoch is stale:
 * the project was placed elsewhere meanwhile, and the copy is set aside, never used. The
 * marker's changes and the copy's setting aside happen under the project's lock on this host,
 * `<root>/.locks/<project>`, which every worker process of the host respects.
 *
 *     <root>/<tenant>/<project>/            the workspace
 *     <root>/.placements/<tenant>/<project> {"epoch": n}
 *     <root>/.locks/<project>               the pid holding the project's lock
 *     <root>/.set-aside/<random>/           stale or evicted copies, being removed
 */

export interface HostCopyRef {
  tenantId: TenantId;
  projectId: ProjectId;
}

/** A project's workspace folder on a host: the same path on every host that has the same root. */
export function hostWorkspacePath(root: string, ref: HostCopyRef): string {
  return path.join(root, ref.tenantId, ref.projectId);
}

/** A set-aside copy is removed in slices, so a large one never holds the worker's event loop. */
const removal = { sliceMs: 20 };

const markerPath = (root: string, ref: HostCopyRef) => path.join(root, ".placements", ref.tenantId, ref.projectId);
const lockPath = (root: string, projectId: ProjectId) => path.join(root, ".locks", projectId);

export type ClaimedCopy =
  /** The copy belongs to this placement: used as it is. */
  | { kind: "current" }
  /** A copy from before placements (or the project's first one) is adopted: it is the only one. */
  | { kind: "adopted" }
  /** A copy of an earlier placement was set aside; the folder is missing now and is rebuilt from the store. */
  | { kind: "stale" }
  /** No copy: the folder is rebuilt from the store (or starts empty). */
  | { kind: "absent" };

/**
 * What one process knows of the copies it found current: the epoch each project's marker named,
 * and when it last touched the marker. An epoch is never given twice, so a copy once found
 * current for an epoch stays so for every batch of that epoch the batch's claim lets through
 * (a newer placement comes with a newer epoch); only the touch, which orders evictions, is kept
 * from going out more often than `touchEveryMs`.
 */
export interface CurrentCopies {
  readonly touchEveryMs: number;
  readonly byProject: Map<string, { epoch: number; touchedAtMs: number }>;
}

export function createCurrentCopies(touchEveryMs = 5_000): CurrentCopies {
  return { touchEveryMs, byProject: new Map() };
}

/**
 * Makes the host's copy of a project that of this placement before a batch uses it. Runs under
 * the project's lock; the removal of a stale copy goes on after it, in the background. With
 * `known`, a copy this process already found current costs no file system call most of the time.
 */
export async function claimHostCopy(root: string, ref: HostCopyRef, epoch: number, known?: CurrentCopies): Promise<ClaimedCopy> {
  const folder = hostWorkspacePath(root, ref);
  const marker = markerPath(root, ref);
  const key = path.join(root, ref.projectId);
  const seen = known?.byProject.get(key);
  const remember = () => known?.byProject.set(key, { epoch, touchedAtMs: Date.now() });
  if (seen?.epoch === epoch) {
    if (Date.now() - seen.touchedAtMs >= (known?.touchEveryMs ?? 0)) {
      await touch(marker);
      remember();
    }
    return { kind: "current" };
  }
  // The common case needs no lock: nothing changes a copy's marker while its placement's batches
  // run (an eviction releases only an idle project, and the cleanup leaves current copies alone).
  if ((await readEpoch(marker)) === epoch) {
    await touch(marker);
    remember();
    return { kind: "current" };
  }
  let aside: string | undefined;
  const claimed = await withProjectLock(root, ref.projectId, async (): Promise<ClaimedCopy> => {
    const recorded = await readEpoch(marker);
    if (recorded === epoch) {
      await touch(marker);
      remember();
      return { kind: "current" };
    }
    const present = await isFolder(folder);
    let kind: ClaimedCopy["kind"] = "absent";
    // Epoch 1 is the project's first placement: no other host can have had a copy of it.
    if (present && recorded === undefined && epoch === 1) kind = "adopted";
    else if (present) {
      aside = await setAside(root, folder);
      kind = "stale";
    }
    await writeEpoch(marker, epoch);
    remember();
    return { kind } as ClaimedCopy;
  });
  if (aside) void removeTreeGradually(aside, removal).catch(() => {});
  return claimed;
}

/**
 * Removes the host's copy of an evicted project, if it still belongs to the evicted placement
 * (a batch of a newer one may have claimed the folder meanwhile). Answers whether it did.
 */
export async function evictHostCopy(root: string, ref: HostCopyRef, epoch: number): Promise<boolean> {
  let aside: string | undefined;
  const evicted = await withProjectLock(root, ref.projectId, async () => {
    if ((await readEpoch(markerPath(root, ref))) !== epoch) return false;
    const folder = hostWorkspacePath(root, ref);
    if (await isFolder(folder)) aside = await setAside(root, folder);
    await unlink(markerPath(root, ref)).catch(() => {});
    return true;
  });
  if (aside) await removeTreeGradually(aside, removal);
  return evicted;
}

/** The copies this host holds, by their markers, least recently used first. */
export async function hostCopies(root: string): Promise<Array<HostCopyRef & { epoch: number; usedAtMs: number }>> {
  const base = path.join(root, ".placements");
  const copies: Array<HostCopyRef & { epoch: number; usedAtMs: number }> = [];
  for (const tenantId of await readdir(base).catch(() => [] as string[])) {
    for (const projectId of await readdir(path.join(base, tenantId)).catch(() => [] as string[])) {
      const ref = { tenantId: tenantId as TenantId, projectId: projectId as ProjectId };
      const marker = markerPath(root, ref);
      const [epoch, stats] = await Promise.all([readEpoch(marker), stat(marker).catch(() => undefined)]);
      if (epoch !== undefined && stats) copies.push({ ...ref, epoch, usedAtMs: stats.mtimeMs });
    }
  }
  return copies.sort((a, b) => a.usedAtMs - b.usedAtMs);
}

/** Forgets the copy of a project whose folder was removed in place (a deleted project's, SPEC F4): its marker goes. */
export async function forgetHostCopy(root: string, ref: HostCopyRef): Promise<void> {
  await withProjectLock(root, ref.projectId, () => unlink(markerPath(root, ref)).catch(() => {}));
}

/** Removes what earlier processes left set aside (a crash in the middle of a removal). */
export async function removeSetAside(root: string): Promise<void> {
  const base = path.join(root, ".set-aside");
  for (const name of await readdir(base).catch(() => [] as string[])) await removeTreeGradually(path.join(base, name), removal);
}

async function setAside(root: string, folder: string): Promise<string> {
  const base = path.join(root, ".set-aside");
  await mkdir(base, { recursive: true, mode: 0o700 });
  const aside = path.join(base, randomBytes(8).toString("hex"));
  await rename(folder, aside);
  return aside;
}

async function readEpoch(marker: string): Promise<number | undefined> {
  try {
    const parsed = JSON.parse(await readFile(marker, "utf8")) as { epoch?: unknown };
    return typeof parsed.epoch === "number" ? parsed.epoch : undefined;
  } catch {
    return undefined;
  }
}

async function writeEpoch(marker: string, epoch: number): Promise<void> {
  await mkdir(path.dirname(marker), { recursive: true, mode: 0o700 });
  const temporary = `${marker}.${randomBytes(4).toString("hex")}`;
  await writeFile(temporary, JSON.stringify({ epoch }), { mode: 0o600 });
  await rename(temporary, marker);
}

async function touch(marker: string): Promise<void> {
  const now = new Date();
  await utimes(marker, now, now).catch(() => {});
}

async function isFolder(folder: string): Promise<boolean> {
  try {
    return (await stat(folder)).isDirectory();
  } catch {
    return false;
  }
}

const lockPollMs = 10;

/**
 * The project's lock on this host, across its worker processes: a file created exclusively,
 * holding the pid; a lock whose pid no longer runs (a SIGKILLed worker) is broken.
 */
async function withProjectLock<T>(root: string, projectId: ProjectId, work: () => Promise<T>): Promise<T> {
  const file = lockPath(root, projectId);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  for (;;) {
    try {
      const handle = await open(file, "wx", 0o600);
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (await holderGone(file)) await unlink(file).catch(() => {});
      else await new Promise((resolve) => setTimeout(resolve, lockPollMs));
    }
  }
  try {
    return await work();
  } finally {
    await unlink(file).catch(() => {});
  }
}

async function holderGone(file: string): Promise<boolean> {
  const pid = Number.parseInt(await readFile(file, "utf8").catch(() => ""), 10);
  // An empty file is a holder between its create and its write: wait for it, unless it died there.
  if (!Number.isInteger(pid) || pid <= 0) {
    const stats = await stat(file).catch(() => undefined);
    return stats !== undefined && Date.now() - stats.mtimeMs > 5_000;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}
