import type { HistoryPoint } from "@foya/client";

/** A point of a session's history (a fork's or a rewind's) as people read it. */
export function pointText(at: HistoryPoint): string {
  if (at.runOrdinal === 0) return "the start";
  return at.stepIndex === null ? `the end of run ${at.runOrdinal}` : `step ${at.stepIndex} of run ${at.runOrdinal}`;
}
