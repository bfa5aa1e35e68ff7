import { openStore } from "../store/open-store.js";

/**
 * A worker process's liveness record (SPEC D9): its row in `workers`, renewed
 * every `intervalMs` with what it holds (jobs per queue, background commands).
 * Leases stay the final authority; this record lets a sweeper notice a dead
 * worker within seconds instead of waiting out a 30 s lease.
 *
 * The renewal has a store of its own, on one connection, so a busy pool (every
 * connection held by jobs) never delays it into a false death.
 */
export interface Liveness {
  /**
   * Whether this process may judge others: its own renewals have succeeded for
   * two intervals in a row. After Postgres comes back from an outage every record
   * is stale; waiting this long lets the living renew before anyone is judged.
   */
  trustsItsView(): boolean;
  stop(options: { drained: boolean }): Promise<void>;
}

export interface LivenessOptions {
  databaseUrl: string;
  worker: { id: string; host: string; pid: number };
  intervalMs: number;
  holdings(): { jobs: Record<string, number>; commands: number };
  onWarning(message: string, error?: unknown): void;
}

export async function startLiveness(options: LivenessOptions): Promise<Liveness> {
  const own = openStore(options.databaseUrl, { max: 1, connectionTimeoutMillis: options.intervalMs * 2 });
  const { workers } = own.store;
  let healthySince: number | undefined;
  let failing = false;
  let renewing: Promise<void> | undefined;
  let stopped = false;

  const renew = async () => {
    try {
      const { wasLost } = await workers.renewWorker({ ...options.worker, ...options.holdings() });
      healthySince ??= Date.now();
      if (failing) options.onWarning("liveness record renewed again");
      failing = false;
      if (wasLost)
        options.onWarning(
          "this worker had been taken for dead (it stopped renewing its liveness record); its jobs of that time were taken over and cannot commit",
        );
    } catch (error) {
      healthySince = undefined;
      if (!failing) options.onWarning("liveness record could not be renewed", error);
      failing = true;
    }
  };
  // The first record exists before the worker takes any job.
  await renew();
  const timer = setInterval(() => {
    if (renewing || stopped) return;
    renewing = renew().finally(() => {
      renewing = undefined;
    });
  }, options.intervalMs);
  timer.unref();

  return {
    trustsItsView: () => healthySince !== undefined && Date.now() - healthySince >= 2 * options.intervalMs,
    async stop({ drained }) {
      stopped = true;
      clearInterval(timer);
      await renewing;
      // A worker that could not drain says nothing: its record goes stale and its work is taken over.
      if (drained)
        await workers
          .stopWorker(options.worker.id)
          .catch((error: unknown) => options.onWarning("could not record the worker's stop", error));
      await own.close();
    },
  };
}
