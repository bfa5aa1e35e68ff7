import { createTwoFilesPatch } from "diff";
import type { FileSnapshot } from "../workspace/workspace-files.js";
import type { FileChangeRecord, ToolContext } from "./tool.js";

export type { FileSnapshot } from "../workspace/workspace-files.js";
export { maxRecordedFileBytes, sha256 } from "../store/blobs.js";

/** Past this size a diff is summarized rather than computed: it is for display only (F2). */
const maxDiffBytes = 1024 * 1024;

export function displayDiff(path: string, before: FileSnapshot, after: FileSnapshot): string {
  if (before.kind === "digest" || after.kind === "digest") {
    const size = (snapshot: FileSnapshot) =>
      snapshot.kind === "absent" ? 0 : snapshot.kind === "digest" ? snapshot.size : snapshot.content.length;
    return `File ${path} changed (${size(before)} → ${size(after)} bytes); too large to keep: no diff, and this change cannot be reverted\n`;
  }
  const old = before.kind === "file" ? before.content : Buffer.alloc(0);
  const next = after.kind === "file" ? after.content : Buffer.alloc(0);
  if (old.includes(0) || next.includes(0)) return `Binary file ${path} changed (${old.length} → ${next.length} bytes)\n`;
  if (old.length + next.length > maxDiffBytes)
    return `File ${path} changed (${old.length} → ${next.length} bytes); too large to show a diff\n`;
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
 * the diff is for people, never for the model (F2). A version too large to
 * keep is recorded by its digest alone (no blob): its revert is refused.
 */
export async function recordFileChange(
  context: Pick<ToolContext, "blobs">,
  path: string,
  before: FileSnapshot,
  after: FileSnapshot,
): Promise<FileChangeRecord> {
  return {
    path,
    existedBefore: before.kind !== "absent",
    modeBefore: before.kind === "absent" ? null : before.mode,
    modeAfter: after.kind === "absent" ? null : after.mode,
    sha256Before: await keep(context, before),
    sha256After: await keep(context, after),
    diff: displayDiff(path, before, after),
  };
}

async function keep(context: Pick<ToolContext, "blobs">, snapshot: FileSnapshot): Promise<string | null> {
  if (snapshot.kind === "absent") return null;
  return snapshot.kind === "digest" ? snapshot.sha256 : context.blobs.put(snapshot.content);
}
