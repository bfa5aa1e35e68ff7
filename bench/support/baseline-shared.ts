import type { JobsOptions } from "bullmq";

/**
 * The bare-BullMQ baseline: a chain of two jobs per step, no Postgres.
 * Job A (like Foya's model step) announces itself and adds job B; job B (like
 * the tool batch) adds the next A. After `steps` A+B pairs, a final A (like
 * the model's closing answer) announces the end of the chain.
 *
 * Queue and job options mirror src/queue/dispatcher.ts and the worker options
 * mirror src/worker/worker-runtime.ts, so the comparison is like for like.
 */
export const baselineQueueA = "base-a";
export const baselineQueueB = "base-b";

export interface ChainJobData {
  chain: string;
  step: number;
  steps: number;
}

/** What job A publishes: every A announces its start, the last one also the end of its chain. */
export interface ChainEvent {
  chain: string;
  step: number;
  kind: "start" | "end";
}

export const chainEventsChannel = (prefix: string): string => `${prefix}:chain-events`;

/** Same options as Foya's dispatcher; ids are derived from the work, like `jobIdFor`. */
export const chainJobOptions = (kind: "a" | "b", data: ChainJobData): JobsOptions => ({
  jobId: `${kind}-${data.chain}-${data.step}`,
  attempts: 3,
  removeOnComplete: { count: 2000 },
  removeOnFail: { count: 5000 },
  backoff: { type: "exponential", delay: 250 },
});

export const baselineReadyMarker = /BASELINE_WORKER_READY/;
