import type { NotAppliedReason } from "../core/file-change-record.js";
import type { FileChangeRow } from "../store/file-changes.js";

/** A file change as the API answers it (SPEC F3): what a host sends back after a revert, too (JSON, no dates). */
export interface FileChangeWire {
  id: string;
  sessionId: string;
  runId: string;
  toolCallId: string | null;
  path: string;
  existedBefore: boolean;
  modeBefore: number | null;
  modeAfter: number | null;
  sha256Before: string | null;
  sha256After: string | null;
  notApplied: NotAppliedReason | null;
  revertedAt: string | null;
  createdAt: string;
}

export function fileChangeWire(row: FileChangeRow): FileChangeWire {
  return {
    id: row.id,
    sessionId: row.sessionId,
    runId: row.runId,
    toolCallId: row.toolCallId,
    path: row.path,
    existedBefore: row.existedBefore,
    modeBefore: row.modeBefore,
    modeAfter: row.modeAfter,
    sha256Before: row.sha256Before,
    sha256After: row.sha256After,
    notApplied: row.notApplied ?? null,
    revertedAt: row.revertedAt ? row.revertedAt.toISOString() : null,
    createdAt: row.createdAt.toISOString(),
  };
}
