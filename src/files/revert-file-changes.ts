import { chmod, lstat, mkdir, realpath, writeFile } from "node:fs/promises";
import path from "node:path";
import { and, desc, eq, gte, inArray, isNull, sql } from "drizzle-orm";
import trash from "trash";
import { fileChanges, projects, sessions } from "../db/schema.js";
import type { Database } from "../db/client.js";
import { FoyaError, notFound } from "../errors.js";
import { sha256, snapshotFile } from "../tools/file-change.js";
import { isInside } from "../tools/workspace-path.js";
import { getBlob } from "./blob-store.js";

export type FileChangeRow = typeof fileChanges.$inferSelect;

/**
 * Reverts one file change, or it and every later change of its session
 * (SPEC F3), newest first. Before touching anything it checks that each file
 * is exactly as the change left it (or as the next newer revert will leave
 * it); any difference refuses the whole revert with a conflict, so a revert
 * never overwrites work done since. Content and mode come back from the blob
 * store; a file the change created goes to the trash.
 */
export async function revertFileChanges(
  db: Database,
  input: { tenantId: string; changeId: string; andLater: boolean },
): Promise<FileChangeRow[]> {
  const [target] = await db
    .select({ change: fileChanges, workspacePath: projects.workspacePath })
    .from(fileChanges)
    .innerJoin(sessions, eq(sessions.id, fileChanges.sessionId))
    .innerJoin(projects, eq(projects.id, sessions.projectId))
    .where(and(eq(fileChanges.id, input.changeId), eq(fileChanges.tenantId, input.tenantId)));
  if (!target) throw notFound("file change");
  if (target.change.revertedAt) throw new FoyaError("conflict", `file change ${target.change.id} was already reverted`);
  const changes = input.andLater
    ? await db
        .select()
        .from(fileChanges)
        .where(and(eq(fileChanges.sessionId, target.change.sessionId), gte(fileChanges.createdAt, target.change.createdAt), isNull(fileChanges.revertedAt)))
        .orderBy(desc(fileChanges.createdAt), desc(fileChanges.id))
    : [target.change];

  const root = await realpath(target.workspacePath);
  const locate = (change: FileChangeRow): string => {
    const absolute = path.isAbsolute(change.path) ? change.path : path.resolve(root, change.path);
    if (!path.isAbsolute(change.path) && !isInside(root, absolute)) throw new FoyaError("conflict", `file change ${change.id} points outside its workspace`);
    return absolute;
  };

  // Check everything first: the expected digest of each path as the reverts proceed.
  const expected = new Map<string, string | null>();
  for (const change of changes) {
    const absolute = locate(change);
    if (!expected.has(absolute)) {
      const now = await snapshotFile(absolute).catch(() => null);
      if (now === null) throw new FoyaError("conflict", `${change.path} is no longer a regular file; the revert was refused`);
      expected.set(absolute, now.kind === "file" ? sha256(now.content) : null);
    }
    if (expected.get(absolute) !== change.sha256After) {
      throw new FoyaError("conflict", `${change.path} changed since file change ${change.id}; the revert was refused and nothing was touched`);
    }
    expected.set(absolute, change.sha256Before);
  }
  const contents = new Map<string, Buffer>();
  for (const change of changes) {
    if (change.sha256Before && !contents.has(change.sha256Before)) {
      const blob = await getBlob(db, input.tenantId, change.sha256Before);
      if (!blob) throw new FoyaError("internal", `the content of ${change.path} before change ${change.id} is missing`);
      contents.set(change.sha256Before, blob);
    }
  }

  for (const change of changes) {
    const absolute = locate(change);
    if (change.sha256Before === null) {
      if (await exists(absolute)) await trash([absolute], { glob: false });
    } else {
      await mkdir(path.dirname(absolute), { recursive: true });
      await writeFile(absolute, contents.get(change.sha256Before) as Buffer);
      if (change.modeBefore !== null) await chmod(absolute, change.modeBefore);
    }
  }
  return db
    .update(fileChanges)
    .set({ revertedAt: sql`now()` })
    .where(inArray(fileChanges.id, changes.map((change) => change.id)))
    .returning()
    .then((rows) => rows.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime()));
}

async function exists(absolute: string): Promise<boolean> {
  try {
    await lstat(absolute);
    return true;
  } catch {
    return false;
  }
}

