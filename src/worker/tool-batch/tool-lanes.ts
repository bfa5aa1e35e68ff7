/** At most this many calls of one batch run at once (SPEC P3). */
export const maxParallelCalls = 5;

/**
 * Splits a batch into lanes (SPEC P1, P2): consecutive parallel-capable calls
 * form one group that runs together; every other call is a group of its own,
 * so a serial call never overlaps another. Groups run in model order.
 */
export function planLanes<T>(calls: readonly T[], isParallel: (call: T) => boolean): T[][] {
  const groups: T[][] = [];
  let parallelGroup: T[] | null = null;
  for (const call of calls) {
    if (isParallel(call)) {
      if (!parallelGroup) {
        parallelGroup = [];
        groups.push(parallelGroup);
      }
      parallelGroup.push(call);
    } else {
      parallelGroup = null;
      groups.push([call]);
    }
  }
  return groups;
}

/** Runs `work` over `items` with at most `limit` at once (P3); never rejects for one item's failure. */
export async function runWithLimit<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const runners = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  });
  await Promise.all(runners);
}
