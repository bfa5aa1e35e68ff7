import { createHash } from "node:crypto";
import { createTwoFilesPatch } from "diff";
import type { FileSnapshot } from "../workspace/workspace-files.js";
import type { FileChangeRecord, ToolContext } from "./tool.js";

export type { FileSnapshot } from "../workspace/workspace-files.js";

/**
 * Largest file a write, edit, delete or revert handles: both versions are kept
 * whole in the blob store (F1), so a bigger one is refused rather than copied.
 */
export const maxRecordedFileBytes = 64 * 1024 * 1024;

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
