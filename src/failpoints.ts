/**
 * Named fault-injection points for crash tests. In production the set is empty
 * and `hit` is a no-op; a test starts a real process with FOYA_FAILPOINTS=name
 * and the process dies at that point exactly as a SIGKILL would leave it.
 */
export type FailpointName =
  | "api.after_run_commit"
  | "worker.after_subagent_start"
  | "worker.step_job_taken"
  | "worker.tool_ran"
  | "worker.project_removal_slice"
  | "worker.checkpoint_rows_written"
  | "worker.checkpoint_blob_chunk_written"
  | "worker.workspace_reset_rebuilt";

export interface Failpoints {
  hit(name: FailpointName): void;
}

export function createFailpoints(enabled: ReadonlySet<string>): Failpoints {
  return {
    hit(name) {
      if (enabled.has(name)) process.kill(process.pid, "SIGKILL");
    },
  };
}
