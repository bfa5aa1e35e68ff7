import { randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import type { EventBus } from "../events/event-bus.js";
import type { WorkerReplies } from "./worker-replies.js";

/**
 * The asking side of a request answered by a worker (MCP requests, src/mcp/mcp-request.ts; host
 * requests, src/hosts/host-request.ts). The sequence: the job is added to the queue with this
 * process's reply channel and a deadline, and the asker waits for the worker's notice; the reply
 * is read from its key (`WorkerReplies`). A job no worker took within the pickup wait is withdrawn
 * (`not_taken`); one taken but unanswered by the deadline is `timeout`. A job a worker held back
 * (delayed it: its tenant's share was full) proves a worker runs, so it is waited for to the deadline.
 */
export type Asked =
  | { kind: "reply"; reply: unknown }
  /** Withdrawn: no worker took it in `waitedMs`; `heldBack`: workers held it back for its tenant's share the whole time. */
  | { kind: "not_taken"; heldBack: boolean; waitedMs: number }
  | { kind: "timeout" }
  /** The asker is closing (the process shuts down). */
  | { kind: "closed" };

/** What the asker adds to every job: where to reply, and when it stops waiting (epoch ms). */
export interface AskedJobMeta {
  replyTo: string;
  deadline: number;
}

export interface AskTiming {
  /** How long the job may wait for a worker to take it. */
  pickupMs: number;
  /** How long the request may take, from enqueue to reply. */
  timeoutMs: number;
}

export interface WorkerRequestAsker {
  /** Adds a job `name` (id `<idPrefix>-<uuid>`) with `data(meta)` to `queue` and waits for its reply. */
  ask<T extends AskedJobMeta>(
    queue: Queue<T>,
    job: { name: string; idPrefix: string; data: (meta: AskedJobMeta) => T },
    timing: AskTiming,
  ): Promise<Asked>;
  close(): Promise<void>;
}

export function createWorkerRequestAsker(options: {
  bus: Pick<EventBus, "onMcpReply">;
  replies: Pick<WorkerReplies, "take">;
}): WorkerRequestAsker {
  const replyTo = randomUUID();
  const noticed = new Map<string, () => void>();
  const closing = new AbortController();
  let listening: Promise<() => void> | undefined;
  let closed = false;
  const state: AskerState = { replies: options.replies, closing: closing.signal };

  return {
    async ask(queue, job, timing) {
      if (closed) return { kind: "closed" };
      // Subscribed before the first job is added, so no notice can come before its listener.
      listening ??= options.bus
        .onMcpReply(replyTo, (jobId) => noticed.get(jobId)?.())
        .catch((error: unknown) => {
          listening = undefined;
          throw error;
        });
      await listening;
      const jobId = `${job.idPrefix}-${randomUUID()}`;
      const notice = new Promise<void>((resolve) => noticed.set(jobId, resolve));
      const deadline = Date.now() + timing.timeoutMs;
      try {
        // Read-only or fenced requests: a job a dead worker held is taken again by another (BullMQ's stall check).
        await queue.add(job.name as never, job.data({ replyTo, deadline }) as never, {
          jobId,
          attempts: 1,
          removeOnComplete: true,
          removeOnFail: true,
        });
        return await answerOf(state, queue, { jobId, notice, deadline }, timing);
      } finally {
        noticed.delete(jobId);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      closing.abort();
      const stopListening = await listening?.catch(() => undefined);
      stopListening?.();
    },
  };
}

interface AskerState {
  replies: Pick<WorkerReplies, "take">;
  closing: AbortSignal;
}

/** The reply to an enqueued request, or why there is none. */
async function answerOf(
  state: AskerState,
  queue: Queue,
  job: { jobId: string; notice: Promise<void>; deadline: number },
  timing: AskTiming,
): Promise<Asked> {
  const { jobId, notice } = job;
  /** Seen held back at the pickup: a worker that takes it past its deadline drops it, and it is gone by the time the asker looks again. */
  let seenHeldBack = false;
  if (!(await waitForNotice(state.closing, notice, timing.pickupMs))) {
    seenHeldBack = await heldBack(queue, jobId);
    // Withdrawn only while no worker holds it (a held job cannot be removed) and none held it back.
    if (!seenHeldBack && (await queue.remove(jobId)) === 1)
      return (await lateReply(state, jobId)) ?? { kind: "not_taken", heldBack: false, waitedMs: timing.pickupMs };
    await waitForNotice(state.closing, notice, job.deadline - Date.now());
  }
  // Taken even without a notice: pub/sub may lose one while the subscriber reconnects.
  const reply = await state.replies.take(jobId);
  if (reply !== undefined) return { kind: "reply", reply };
  // A job still held back for its tenant's share, or one whose worker died and whose lock lapsed, not taken again since.
  const wasHeldBack = seenHeldBack || (await heldBack(queue, jobId));
  if ((await queue.remove(jobId)) === 1)
    return (await lateReply(state, jobId)) ?? { kind: "not_taken", heldBack: wasHeldBack, waitedMs: timing.timeoutMs };
  return state.closing.aborted ? { kind: "closed" } : { kind: "timeout" };
}

/** Whether the notice came within `ms` (false on timeout or close). */
function waitForNotice(signal: AbortSignal, notice: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const finish = (came: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onClose);
      resolve(came);
    };
    const onClose = () => finish(false);
    const timer = setTimeout(() => finish(false), Math.max(0, ms));
    signal.addEventListener("abort", onClose, { once: true });
    if (signal.aborted) finish(false);
    void notice.then(() => finish(true));
  });
}

/**
 * BullMQ's remove also answers 1 for a job that is gone: one a worker finished, replying,
 * between the asker's last look for a reply and the remove. Its reply is taken, not lost.
 */
async function lateReply(state: AskerState, jobId: string): Promise<Asked | undefined> {
  const reply = await state.replies.take(jobId);
  return reply === undefined ? undefined : { kind: "reply", reply };
}

/**
 * Whether a worker took the job and moved it back to the queue because its tenant's requests
 * filled their share. Between its delay and the next take it waits like a new job, so a job a
 * worker ever took (`processedOn`) counts too: a worker runs, and the request is waited for.
 */
async function heldBack(queue: Queue, jobId: string): Promise<boolean> {
  const job = await queue.getJob(jobId);
  return Number(job?.delay ?? 0) > 0 || job?.processedOn !== undefined;
}
