import type { FileChangeId } from "./ids.js";

/** A file change produced by a tool (SPEC F1); stored and shown to clients, never to the model. */
export interface FileChangeRecord {
  /** Set when the id was fixed before the change was made (a layered command's, `layer-journal.ts`), so it is stored once. */
  id?: FileChangeId;
  path: string;
  existedBefore: boolean;
  modeBefore: number | null;
  modeAfter: number | null;
  sha256Before: string | null;
  sha256After: string | null;
  diff: string;
  /**
   * Set when the change was recorded but not made (SPEC X7): the workspace's file changed
   * after the command made its version (a later or concurrent change, which is never
   * overwritten), so the newer content was kept. The record keeps both versions; reverting it
   * has nothing to undo.
   */
  notApplied?: NotAppliedReason;
}

export type NotAppliedReason = "changed_since";
