import type { Queue } from "bullmq";

/**
 * Where the time of one step goes, from BullMQ's own job timestamps (kept in
 * Redis for the last 2,000 completed jobs per queue). Every step is a chain
 * first job → second job → next first job, and its cycle (first job start to
 * next first job start) splits exactly into:
 *
 *   firstInJob   first job started → second job enqueued   (Foya: model step job)
 *   secondWait   second job enqueued → second job started  (queue hop)
 *   secondInJob  second job started → next first enqueued (Foya: tool batch job)
 *   firstWait    next first enqueued → next first started  (queue hop)
 *
 * Timestamps are Date.now() in the worker processes, so 1 ms resolution; good
 * enough for means over hundreds of steps.
 */
export interface CycleSegments {
  firstInJob: number[];
  secondWait: number[];
  secondInJob: number[];
  firstWait: number[];
  /** Steps whose jobs were no longer in Redis or never ran. */
  missing: number;
}

interface JobTimes {
  added: number;
  started: number;
}

async function jobTimes(queue: Queue, id: string): Promise<JobTimes | undefined> {
  const job = await queue.getJob(id);
  if (!job || job.processedOn === undefined || job.processedOn === null) return undefined;
  return { added: job.timestamp, started: job.processedOn };
}

export interface ChainRef {
  /** Number of full steps (first+second pairs) in the chain; step `steps` is the closing first job. */
  steps: number;
  firstId(step: number): string;
  secondId(step: number): string;
  /** The queue of this chain's first jobs, when not `first` (Foya's step queue shard of the run). */
  firstQueue?: Queue;
}

export async function cycleSegments(first: Queue, second: Queue, chains: readonly ChainRef[]): Promise<CycleSegments> {
  const segments: CycleSegments = { firstInJob: [], secondWait: [], secondInJob: [], firstWait: [], missing: 0 };
  for (const chain of chains) {
    for (let step = 0; step < chain.steps; step++) {
      const [a, b, next] = await Promise.all([
        jobTimes(chain.firstQueue ?? first, chain.firstId(step)),
        jobTimes(second, chain.secondId(step)),
        jobTimes(chain.firstQueue ?? first, chain.firstId(step + 1)),
      ]);
      if (!a || !b || !next) {
        segments.missing++;
        continue;
      }
      segments.firstInJob.push(b.added - a.started);
      segments.secondWait.push(b.started - b.added);
      segments.secondInJob.push(next.added - b.started);
      segments.firstWait.push(next.started - next.added);
    }
  }
  return segments;
}
