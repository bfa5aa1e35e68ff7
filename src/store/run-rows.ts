import type { runs, toolCalls } from "../db/schema.js";

/** Row shapes of runs and their calls, shared by the store's run and call modules. */

export type RunRow = typeof runs.$inferSelect;
/** A run a job claimed: it has its place in the session's history. */
export type ClaimedRun = RunRow & { ordinal: number };
export type CallRow = typeof toolCalls.$inferSelect;
