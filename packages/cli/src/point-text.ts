/** A point of a session's history (a fork's or a rewind's) as people read it. */
export function pointText(at: { runOrdinal: number; stepIndex: number | null }): string {
  if (at.runOrdinal === 0) return "the start";
  return at.stepIndex === null ? `the end of run ${at.runOrdinal}` : `step ${at.stepIndex} of run ${at.runOrdinal}`;
}
