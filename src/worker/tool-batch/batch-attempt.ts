import type { StepRef } from "../../core/events.js";
import type { ApprovalMode } from "../../core/session.js";
import type { ScopedTools } from "../../mcp/tool-catalog.js";
import type { ClaimedRun } from "../../store/runs.js";
import type { SessionRow } from "../session-context-cache.js";
import type { CheckpointId, ProjectId } from "../../ids.js";
import type { WorkspaceChangeLog } from "./workspace-changes.js";

/** What every transaction of one batch attempt needs to know about it, known once the batch is claimed. */
export interface BatchScope {
  run: ClaimedRun;
  stepRef: StepRef;
  session: SessionRow;
  approvalMode: ApprovalMode;
  projectId: ProjectId;
  workspaceDir: string;
  tools: ScopedTools;
  /** The tools the model was offered in the step that made these calls. */
  stepTools: readonly string[];
  /** The tenant's `toolCalls` quota (SPEC X5); 0: no limit. */
  callQuota: number;
  /**
   * A call of this batch may change the workspace (a tool that writes or runs commands): the batch
   * then closes in the settle transaction, with its checkpoint (SPEC W1), never in a call's commit.
   */
  checkpoint: boolean;
  /** A rewind's or a fork's order, read by the claim: rebuild the folder from this checkpoint first (SPEC W2). */
  workspaceResetTo: CheckpointId | null;
  /** The project's placement on this host the claim was fenced by (SPEC W3). */
  placement: { hostId: string; epoch: number };
}

/**
 * One attempt of a tool-batch job, as its phases share it (the way Temporal's activity
 * carries its context): the scope, the lease owner, the run's abort signal, and the calls
 * this attempt has marked `running` (any other call of a group takes its slot as it starts).
 */
export interface BatchAttempt extends BatchScope {
  owner: string;
  signal: AbortSignal;
  started: Set<string>;
  /** What this attempt's calls changed in the workspace, for its checkpoint (SPEC W1). */
  changes: WorkspaceChangeLog;
}
