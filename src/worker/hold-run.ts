import { DelayedError, type Job } from "bullmq";
import type { LeaseKeeper } from "./lease-keeper.js";
import type { RunAborts } from "./run-aborts.js";
import type { RunId } from "../ids.js";

/**
 * Puts a job back as delayed and ends its processor with BullMQ's `DelayedError`: BullMQ counts
 * it neither failed nor done, and it holds no worker slot while it waits.
 */
export async function delayJob(job: Job, token: string | undefined, retryInMs: number): Promise<never> {
  await job.moveToDelayed(Date.now() + retryInMs, token);
  throw new DelayedError();
}

/** Runs `work` while this process renews the claimed run's lease (`owner`); released however it ends. */
export async function holdingLease<T>(leases: LeaseKeeper, owner: string, work: () => Promise<T>): Promise<T> {
  leases.hold(owner);
  try {
    return await work();
  } finally {
    leases.release(owner);
  }
}

/** Runs `work` with a signal the run's cancel broadcast (or a draining worker) aborts. */
export async function withRunAbort<T>(aborts: RunAborts, runId: RunId, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = aborts.register(runId);
  try {
    return await work(controller.signal);
  } finally {
    aborts.unregister(runId, controller);
  }
}
