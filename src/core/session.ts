/** How a session's calls are approved (SPEC S2, S8). */
export type ApprovalMode = "manual" | "auto" | "full_access";

/** What a session's tools may do: everything, or only what reads. */
export type RunMode = "normal" | "read_only";

/** One entry of a session's task list, kept by the model with update_tasks. */
export interface SessionTask {
  title: string;
  status: "pending" | "in_progress" | "done";
}

/** What a new run does while another run of its session is active (SPEC X6). */
export type ActivePolicy = "reject" | "enqueue" | "interrupt";

/**
 * What a run does when a tool call of it is interrupted by a worker's death (SPEC D10):
 * `end` ends the run `interrupted`; `continue` gives the call its honest tool message
 * and goes on with the next model step, a bounded number of times.
 */
export type OnInterrupted = "end" | "continue";
