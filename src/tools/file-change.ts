import { createHash } from "node:crypto";
import { lstat, readFile } from "node:fs/promises";
import { createTwoFilesPatch } from "diff";
import type { FileChangeRecord, ToolContext } from "./tool.js";

/** A file as it is on disk at one moment; `absent` also covers "never existed". */
export type FileSnapshot = { kind: "absent" } | { kind: "file"; content: Buffer; mode: number };

export async function snapshotFile(absolute: string): Promise<FileSnapshot> {
  try {
    const stat = await lstat(absolute);
    if (!stat.isFile()) throw Object.assign(new Error(`${absolute} is not a regular file`), { code: "ENOTFILE" });
    return { kind: "file", content: await readFile(absolute), mode: stat.mode & 0o7777 };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { kind: "absent" };
    throw error;
  }
}

export function sha256(content: Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

/** Past this size a diff is summarized rather than computed: it is for display only (F2). */
const maxDiffBytes = 1024 * 1024;

export function displayDiff(path: string, before: FileSnapshot, after: FileSnapshot): string {
  const old = before.kind === "file" ? before.content : Buffer.alloc(0);
  const next = after.kind === "file" ? after.content : Buffer.alloc(0);
  if (old.includes(0) || next.includes(0)) return `Binary file ${path} changed (${old.length} → ${next.length} bytes)\n`;
  if (old.length + next.length > maxDiffBytes) return `File ${path} changed (${old.length} → ${next.length} bytes); too large to show a diff\n`;
  return createTwoFilesPatch(
    before.kind === "file" ? `a/${path}` : "/dev/null",
    after.kind === "file" ? `b/${path}` : "/dev/null",
    old.toString("utf8"),
    next.toString("utf8"),
  );
}

/**
 * Builds the File Change of one path (SPEC F1): both contents go to the
 * content-addressed blob store, so the change can be reviewed and reverted;
 * the diff is for people, never for the model (F2).
 */
export async function recordFileChange(
  context: Pick<ToolContext, "blobs">,
  path: string,
  before: FileSnapshot,
  after: FileSnapshot,
): Promise<FileChangeRecord> {
  const sha256Before = before.kind === "file" ? await context.blobs.put(before.content) : null;
  const sha256After = after.kind === "file" ? await context.blobs.put(after.content) : null;
  return {
    path,
    existedBefore: before.kind === "file",
    modeBefore: before.kind === "file" ? before.mode : null,
    modeAfter: after.kind === "file" ? after.mode : null,
    sha256Before,
    sha256After,
    diff: displayDiff(path, before, after),
  };
}
