/**
 * Statements in batches (docs/architecture/store.md): writes of one kind (tool results, step
 * commits, claims) that reach one process while its statements of that kind are busy go together as one
 * multi-row statement when one of them ends, so they share its round trip, plan and commit
 * (`bench/batching-probe.ts` measured an answer's Postgres CPU at about a tenth under load). An
 * idle process sends at once (after the current turn of the event loop, to gather that turn's
 * writes): no timer, no added wait.
 *
 * Each row keeps its own guards (fences, statuses): a stale row is refused alone. Rows of one key
 * (`keyOf`: a write's session, whose event sequence is bumped once per statement; a claim's run)
 * are never in flight together: a write sent after its sibling's commit sees that sibling (the last
 * answer of a tool batch hands the run on); a second waits for a later statement. A batch that
 * fails is tried again one row per statement, so one row's failure is its own.
 */
export interface StatementBatchOptions {
  /** Statements of the kind at once; what arrives meanwhile waits for one of them. */
  inFlight: number;
  /** Rows in one statement at most. */
  maxRows: number;
}

export const defaultStatementBatches: StatementBatchOptions = { inFlight: 2, maxRows: 32 };

/** One multi-row statement: a result per request, in the requests' order. */
export type SendBatch<Request, Result> = (requests: readonly Request[]) => Promise<Result[]>;

interface Waiting<Request, Result> {
  request: Request;
  done: (result: Result) => void;
  failed: (error: unknown) => void;
}

export function statementBatcher<Request, Result>(
  send: SendBatch<Request, Result>,
  keyOf: (request: Request) => string,
  options: StatementBatchOptions = defaultStatementBatches,
  /**
   * A row that must not wait (a result whose file changes are in the workspace already: a door
   * write's record lives only in memory until its statement is sent; a command's is journaled in
   * its layer): sent at once as its own statement, beside those in flight, unless its key has one
   * in flight.
   */
  urgent?: (request: Request) => boolean,
): (request: Request) => Promise<Result> {
  let waiting: Waiting<Request, Result>[] = [];
  let running = 0;
  /** Keys with a row in a statement now. */
  const busy = new Set<string>();
  let scheduled = false;

  /** The next batch: waiting rows in arrival order, one per key not already in flight, at most `maxRows`. */
  const take = (): Waiting<Request, Result>[] => {
    const batch: Waiting<Request, Result>[] = [];
    const rest: Waiting<Request, Result>[] = [];
    for (const entry of waiting) {
      const key = keyOf(entry.request);
      if (batch.length < options.maxRows && !busy.has(key)) {
        busy.add(key);
        batch.push(entry);
      } else rest.push(entry);
    }
    waiting = rest;
    return batch;
  };

  const settle = async (batch: Waiting<Request, Result>[]): Promise<void> => {
    try {
      const results = await send(batch.map((entry) => entry.request));
      for (const [index, entry] of batch.entries()) entry.done(results[index] as Result);
    } catch (error) {
      if (batch.length === 1) {
        batch[0]?.failed(error);
        return;
      }
      // One at a time: each row's own failure (or success) is its own.
      await Promise.all(
        batch.map((entry) =>
          send([entry.request]).then(
            ([result]) => entry.done(result as Result),
            (single: unknown) => entry.failed(single),
          ),
        ),
      );
    }
  };

  /** Sends `batch` now as one statement; its keys are free again, and the waiting rows pumped, when it ends. */
  const launch = (batch: Waiting<Request, Result>[]): void => {
    for (const entry of batch) busy.add(keyOf(entry.request));
    running++;
    void settle(batch).finally(() => {
      running--;
      for (const entry of batch) busy.delete(keyOf(entry.request));
      pump();
    });
  };

  const pump = (): void => {
    scheduled = false;
    while (running < options.inFlight && waiting.length > 0) {
      const batch = take();
      // Everything waiting belongs to keys in flight: their statements' ends pump again.
      if (batch.length === 0) return;
      launch(batch);
    }
  };

  return (request) =>
    new Promise<Result>((done, failed) => {
      if (urgent?.(request) && !busy.has(keyOf(request))) {
        launch([{ request, done, failed }]);
        return;
      }
      waiting.push({ request, done, failed });
      if (!scheduled && running < options.inFlight) {
        scheduled = true;
        setImmediate(pump);
      }
    });
}
