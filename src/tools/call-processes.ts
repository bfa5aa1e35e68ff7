import type { ProcessLimits } from "../core/process-limits.js";
import type { PreparedShell } from "./shell/spawn-shell.js";

/**
 * How a tool starts processes (SPEC S3, S7, S8). The engine builds it for each
 * call: the workspace as working directory, the call's confinement, the
 * tenant's uid and limits. A tool never chooses any of them, and never sees a
 * host path.
 */
export interface CallProcesses {
  /**
   * Prepares `bash -c command`; answers why it cannot run (nothing ran) when
   * its confinement cannot be set up (`sandbox_unavailable`: the call fails
   * closed) or the session's Full Access is no longer granted
   * (`full_access_not_granted`). With `recordChanges` (a foreground `bash`
   * call outside Full Access, on a worker that can), the command runs on a
   * layer over the workspace and the prepared shell carries it (SPEC X7);
   * with `summarizeChanges` (a background command, which cannot be layered)
   * the workspace's manifest is taken now, to summarize its changes at the end.
   * With `background` the command outlives its call and gets the smaller
   * temporary space (`limits.backgroundTmpBytes`). A prepared shell that is
   * not started is discarded (`discard()`), which gives its share back.
   */
  prepare(
    command: string,
    output: { headBytes: number; tailBytes: number },
    how?: { recordChanges?: boolean; summarizeChanges?: boolean; background?: boolean },
  ): Promise<PreparedShell | ProcessRefusal>;
  /** The limits the processes run under, for messages and for capping a call's own timeout. */
  limits: ProcessLimits;
}

export interface ProcessRefusal {
  unavailable: string;
  code: "sandbox_unavailable" | "full_access_not_granted";
}
