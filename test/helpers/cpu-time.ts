/**
 * CPU time spent on work that holds the event loop (SPEC S9), measured so that a loaded
 * machine does not decide the result: CPU time, not wall time (waiting for a core is not
 * work), and the least of several runs, since the process's CPU time also counts V8's
 * background threads (the optimizing compiler, concurrent marking) whenever they run: the
 * least run is the closest upper bound of the work itself.
 */
function cpuMs(): number {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1000;
}

/** The least CPU time of five runs of `run`, after two warm-ups, in ms. */
export function leastCpuMs(run: () => unknown): number {
  run();
  run();
  let least = Number.POSITIVE_INFINITY;
  for (let index = 0; index < 5; index++) {
    const started = cpuMs();
    run();
    least = Math.min(least, cpuMs() - started);
  }
  return least;
}

/**
 * The longest stretch of CPU time between two turns of the event loop while `work` runs, in
 * ms: a ticker takes every turn, so what ran between two ticks ran without yielding. `turns`
 * counts the ticks.
 */
export async function longestStretch(work: () => Promise<unknown>): Promise<{ longestMs: number; turns: number }> {
  let last = cpuMs();
  let longestMs = 0;
  let turns = 0;
  let running = true;
  const tick = () => {
    const now = cpuMs();
    longestMs = Math.max(longestMs, now - last);
    last = now;
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  await work();
  running = false;
  tick();
  return { longestMs, turns };
}

/** `longestStretch` of the least of `rounds` rounds (each builds its own work), with the turns of that round. */
export async function leastLongestStretch(
  rounds: number,
  work: (round: number) => Promise<unknown>,
): Promise<{ longestMs: number; turns: number }> {
  let least = { longestMs: Number.POSITIVE_INFINITY, turns: 0 };
  for (let round = 0; round < rounds; round++) {
    const measured = await longestStretch(() => work(round));
    if (measured.longestMs < least.longestMs) least = measured;
  }
  return least;
}
