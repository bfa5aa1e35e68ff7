import type { SessionId } from "../ids.js";
import type { Answered, AnswerRequest } from "./tool-calls.js";

/**
 * Answers in batches (docs/architecture/store.md): results that reach one process while its
 * answer statements are busy go together as one multi-row statement when one of them ends, so
 * they share its round trip, plan and commit (`bench/batching-probe.ts` measured a result's
 * Postgres CPU at about a tenth under load). An idle process sends an answer at once (after the
 * current turn of the event loop, to gather the answers of that turn): no timer, no added wait.
 *
 * Each row keeps its own guards (the call's status and fence, the run's fence): a stale row is
 * refused alone. A session has at most one answer in flight (its event sequence is bumped once per
 * statement, and an answer sent after its sibling's commit sees that sibling closed, so the last
 * answer of a batch hands the run on); a second waits for a later statement. A batch that fails is
 * tried again one answer per statement, so one answer's failure is its own.
 */
export interface AnswerBatchOptions {
  /** Answer statements at once; what arrives meanwhile waits for one of them. */
  inFlight: number;
  /** Rows in one statement at most. */
  maxRows: number;
}

export const defaultAnswerBatches: AnswerBatchOptions = { inFlight: 2, maxRows: 32 };

type Send = (requests: readonly AnswerRequest[]) => Promise<Answered[]>;

interface Waiting {
  request: AnswerRequest;
  done: (answered: Answered) => void;
  failed: (error: unknown) => void;
}

export function answerBatcher(
  send: Send,
  options: AnswerBatchOptions = defaultAnswerBatches,
): (request: AnswerRequest) => Promise<Answered> {
  let waiting: Waiting[] = [];
  let running = 0;
  /** Sessions with an answer in a statement now. */
  const busy = new Set<SessionId>();
  let scheduled = false;

  /** The next batch: waiting answers in arrival order, one per session not already in flight, at most `maxRows`. */
  const take = (): Waiting[] => {
    const batch: Waiting[] = [];
    const rest: Waiting[] = [];
    for (const entry of waiting) {
      const session = entry.request.run.sessionId;
      if (batch.length < options.maxRows && !busy.has(session)) {
        busy.add(session);
        batch.push(entry);
      } else rest.push(entry);
    }
    waiting = rest;
    return batch;
  };

  const settle = async (batch: Waiting[]): Promise<void> => {
    try {
      const answered = await send(batch.map((entry) => entry.request));
      for (const [index, entry] of batch.entries()) entry.done(answered[index] as Answered);
    } catch (error) {
      if (batch.length === 1) {
        batch[0]?.failed(error);
        return;
      }
      // One at a time: each answer's own failure (or success) is its own.
      await Promise.all(
        batch.map((entry) =>
          send([entry.request]).then(
            ([answered]) => entry.done(answered as Answered),
            (single: unknown) => entry.failed(single),
          ),
        ),
      );
    }
  };

  const pump = (): void => {
    scheduled = false;
    while (running < options.inFlight && waiting.length > 0) {
      const batch = take();
      // Everything waiting belongs to sessions in flight: their statements' ends pump again.
      if (batch.length === 0) return;
      running++;
      void settle(batch).finally(() => {
        running--;
        for (const entry of batch) busy.delete(entry.request.run.sessionId);
        pump();
      });
    }
  };

  return (request) =>
    new Promise<Answered>((done, failed) => {
      waiting.push({ request, done, failed });
      if (!scheduled && running < options.inFlight) {
        scheduled = true;
        setImmediate(pump);
      }
    });
}
