import { performance } from "node:perf_hooks";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import {
  baselineQueueA,
  baselineQueueB,
  chainEventsChannel,
  chainJobOptions,
  type ChainEvent,
  type ChainJobData,
} from "./baseline-shared.js";
import type { ChainRef } from "./job-timings.js";

/**
 * The benchmark side of the bare-BullMQ baseline: enqueues each chain's first
 * job (as Foya's API enqueues a run's first step) and observes the chains'
 * announcements on Redis pub/sub, timing their arrival like Foya's events.
 */
export interface ChainRecord {
  chain: string;
  steps: number;
  requestedAt: number;
  /** Arrival time of each A job's start announcement, by step. */
  starts: Map<number, number>;
  endedAt: number;
}

export class BaselineDriver {
  readonly queueA: Queue<ChainJobData>;
  readonly queueB: Queue<ChainJobData>;
  private readonly listeners = new Map<string, (event: ChainEvent, at: number) => void>();
  private counter = 0;

  private constructor(
    private readonly connection: Redis,
    private readonly subscriber: Redis,
    prefix: string,
  ) {
    this.queueA = new Queue<ChainJobData>(baselineQueueA, { connection, prefix });
    this.queueB = new Queue<ChainJobData>(baselineQueueB, { connection, prefix });
    subscriber.on("message", (_channel: string, message: string) => {
      const at = performance.now();
      const event = JSON.parse(message) as ChainEvent;
      this.listeners.get(event.chain)?.(event, at);
    });
  }

  static async create(redisUrl: string, prefix: string): Promise<BaselineDriver> {
    const options = { maxRetriesPerRequest: null, enableReadyCheck: true };
    const connection = new Redis(redisUrl, options);
    const subscriber = new Redis(redisUrl, options);
    await subscriber.subscribe(chainEventsChannel(prefix));
    return new BaselineDriver(connection, subscriber, prefix);
  }

  /** Starts `count` chains of `steps` steps at once and waits for all of them to end. */
  async runChains(count: number, steps: number, timeoutMs: number): Promise<ChainRecord[]> {
    const batch = this.counter++;
    const chains = Array.from({ length: count }, (_, i) => `c${batch}x${i}`);
    const pending = chains.map((chain) => {
      const record: ChainRecord = { chain, steps, requestedAt: 0, starts: new Map(), endedAt: 0 };
      const ended = new Promise<ChainRecord>((resolve) => {
        this.listeners.set(chain, (event, at) => {
          if (event.kind === "start" && !record.starts.has(event.step)) record.starts.set(event.step, at);
          if (event.kind === "end") {
            record.endedAt = at;
            resolve(record);
          }
        });
      });
      return { chain, record, ended };
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`baseline chains did not end within ${timeoutMs} ms`)), timeoutMs);
      });
      const all = Promise.all(
        pending.map(async ({ chain, record, ended }) => {
          const data: ChainJobData = { chain, step: 0, steps };
          record.requestedAt = performance.now();
          await this.queueA.add("a", data, chainJobOptions("a", data));
          return ended;
        }),
      );
      return await Promise.race([all, timeout]);
    } finally {
      clearTimeout(timer);
      for (const chain of chains) this.listeners.delete(chain);
    }
  }

  /** Job-id references for reading BullMQ's timestamps (see job-timings.ts). */
  static chainRefs(records: readonly ChainRecord[]): ChainRef[] {
    return records.map((record) => ({
      steps: record.steps,
      firstId: (step) => `a-${record.chain}-${step}`,
      secondId: (step) => `b-${record.chain}-${step}`,
    }));
  }

  async close(): Promise<void> {
    await Promise.all([this.queueA.close(), this.queueB.close()]);
    this.subscriber.disconnect();
    this.connection.disconnect();
  }
}

/** A-start(k) → A-start(k+1) for every full step of every chain. */
export function chainIntervals(records: readonly ChainRecord[]): number[] {
  const intervals: number[] = [];
  for (const record of records) {
    for (let k = 0; k < record.steps; k++) {
      const a = record.starts.get(k);
      const b = record.starts.get(k + 1);
      if (a !== undefined && b !== undefined) intervals.push(b - a);
    }
  }
  return intervals;
}

/** Enqueue → first A start of each chain: one bare queue hop (with the announcement's publish), the floor of a run's first step. */
export function firstStartDelays(records: readonly ChainRecord[]): number[] {
  return records.flatMap((record) => {
    const start = record.starts.get(0);
    return start === undefined ? [] : [start - record.requestedAt];
  });
}
