export type Dependency = "postgres" | "redis";

/**
 * What a process is doing while it starts (SPEC D9), for `/readyz` and the "starting"
 * answers of an API that listens before its dependencies answer.
 */
export interface StartupStatus {
  /** "waiting for postgres", "waiting for postgres and redis", "starting", ... */
  describe(): string;
  /** Marks a dependency as not (yet) answering, or as answering again. */
  waiting(dependency: Dependency, waiting: boolean): void;
}

const order: readonly Dependency[] = ["postgres", "redis"];

export function createStartupStatus(): StartupStatus {
  const waitingFor = new Set<Dependency>();
  return {
    describe: () => (waitingFor.size > 0 ? `waiting for ${order.filter((name) => waitingFor.has(name)).join(" and ")}` : "starting"),
    waiting(dependency, waiting) {
      if (waiting) waitingFor.add(dependency);
      else waitingFor.delete(dependency);
    },
  };
}
