import { randomUUID } from "node:crypto";
import { constants, lstatSync, mkdirSync, renameSync, type Stats } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { viaDescriptor, type HeldEntry } from "./descriptor-walk.js";
import { digestOf, readBounded, refuseIrregular, reopen } from "./held-file.js";
import { shorten } from "./path-components.js";
import { WorkspaceError, type TrashedFile } from "./workspace-files.js";
import { walkTree } from "./workspace-tree.js";
import { moveIntoTrash } from "./project-trash.js";

/**
 * Removal through the door (SPEC F4, S6): record every regular file the
 * removal takes away (so a revert can bring it back), then move the entry to
 * the project's trash without ever naming it by a path a tenant can change.
 */

const { O_RDONLY } = constants;

/**
 * Every regular file a removal takes away, read before anything moves, so the
 * change can be reverted: whole while the removal's files add up to at most
 * `maxBytes`, by digest only past that (those cannot be reverted; they still go
 * to the project's trash). More than `maxFiles` files refuse the removal.
 */
export async function recordRemoval(
  target: HeldEntry,
  at: string,
  limits: { maxFiles: number; maxBytes: number; shown: string },
): Promise<TrashedFile[]> {
  if (target.stats.isFile()) {
    refuseIrregular(target.stats, limits.shown);
    const mode = target.stats.mode & 0o7777;
    const handle = await reopen(target, O_RDONLY);
    try {
      const snapshot: TrashedFile["snapshot"] =
        target.stats.size > limits.maxBytes
          ? { kind: "digest", ...(await digestOf(handle)), mode }
          : { kind: "file", content: await readBounded(handle, limits.maxBytes, limits.shown), mode };
      return [{ path: at, snapshot }];
    } finally {
      await handle.close();
    }
  }
  if (!target.stats.isDirectory()) return []; // a symlink or special file is moved, not recorded
  const files: TrashedFile[] = [];
  let bytes = 0;
  await walkTree(target, { maxEntries: Number.POSITIVE_INFINITY }, async (file) => {
    if (file.kind !== "file") return;
    if (files.length >= limits.maxFiles) {
      throw new WorkspaceError(
        "too_large",
        `"${shorten(limits.shown)}" holds more than ${limits.maxFiles} files to record; remove smaller parts.`,
      );
    }
    const read = await file.read(Math.max(0, limits.maxBytes - bytes), "digest");
    if (read.kind === "skipped") {
      if (read.reason === "hard_link")
        throw new WorkspaceError(
          "hard_link",
          `"${at}/${file.path}" has more than one hard link; the removal was refused, as another link may be outside the workspace.`,
        );
      return; // replaced by a link or a special file since the listing: moved along, not recorded
    }
    if (read.kind === "read") bytes += read.content.length;
    files.push({
      path: `${at}/${file.path}`,
      snapshot: read.kind === "read" ? { kind: "file", content: read.content, mode: read.mode } : read,
    });
  });
  return files;
}

/**
 * Renames the entry, by its parent's descriptor, into the private staging
 * folder, checks it is the entry that was recorded, then lets the project's
 * trash (`project-trash.ts`) take it from there by a path no tenant controls. The trash's record then
 * names where the entry really was, so it can be restored from the project's trash.
 */
export async function moveToTrash(
  parent: HeldEntry,
  name: string,
  recorded: Stats,
  where: { staging: string; trash: string; original: string },
  requested: string,
): Promise<void> {
  mkdirSync(where.staging, { recursive: true, mode: 0o700 });
  const parked = path.join(where.staging, randomUUID());
  const origin = viaDescriptor(parent.fd, name);
  try {
    renameSync(origin, parked);
  } catch (error) {
    throw new WorkspaceError(
      "io_failed",
      `Could not move "${shorten(requested)}" to the trash: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`,
    );
  }
  const moved = lstatSync(parked);
  if (moved.ino !== recorded.ino || moved.dev !== recorded.dev) {
    renameSync(parked, origin);
    throw new WorkspaceError("io_failed", `"${shorten(requested)}" changed while it was being removed; nothing was removed.`);
  }
  let trashed: unknown;
  try {
    trashed = await moveIntoTrash(where.trash, [parked]);
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
  await writeFile(
    info,
    text.replace(/^Path=.*$/m, () => `Path=${encodeURI(original)}`),
  ).catch(() => {});
}
