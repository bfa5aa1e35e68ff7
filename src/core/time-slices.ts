import { setImmediate as yieldToLoop } from "node:timers/promises";

/**
 * Work sized by a tenant or a model (the files of a layer, the entries of a
 * tree) runs in slices of a few milliseconds and gives the event loop back
 * between them: a processor that blocks for seconds loses its job lock and is
 * taken for dead, and an API in the same process stops answering everyone.
 *
 *     const slices = timeSlices();
 *     for (const item of many) {
 *       work(item);
 *       if (slices.spent()) await slices.pause();
 *     }
 */
export interface TimeSlices {
  /** Whether the current slice is used up. */
  spent(): boolean;
  /** Lets everything else waiting on the event loop run, then starts a new slice. */
  pause(): Promise<void>;
}

/** How long one slice runs before it yields, by default. */
const defaultSliceMs = 8;

export function timeSlices(sliceMs = defaultSliceMs): TimeSlices {
  let started = performance.now();
  return {
    spent: () => performance.now() - started >= sliceMs,
    async pause() {
      await yieldToLoop();
      started = performance.now();
    },
  };
}
