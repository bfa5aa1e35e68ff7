/**
 * A bare-BullMQ worker process for the baseline chain (see baseline-shared.ts).
 * Started by the benchmark like a Foya worker; configured through env:
 * REDIS_URL, BENCH_BASELINE_PREFIX, BENCH_CONCURRENCY, BENCH_LOCK_MS, BENCH_STALLED_MS.
 */
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import {
  baselineQueueA,
  baselineQueueB,
  chainEventsChannel,
  chainJobOptions,
  type ChainEvent,
  type ChainJobData,
} from "./baseline-shared.js";

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const redisUrl = requiredEnv("REDIS_URL");
const prefix = requiredEnv("BENCH_BASELINE_PREFIX");
const concurrency = Number(requiredEnv("BENCH_CONCURRENCY"));
const lockDuration = Number(requiredEnv("BENCH_LOCK_MS"));
const stalledInterval = Number(requiredEnv("BENCH_STALLED_MS"));

// As in Foya: one shared command connection for adds and publishes, one connection per Worker.
const redisOptions = { maxRetriesPerRequest: null, enableReadyCheck: true };
const shared = new Redis(redisUrl, redisOptions);
const queueA = new Queue<ChainJobData>(baselineQueueA, { connection: shared, prefix });
const queueB = new Queue<ChainJobData>(baselineQueueB, { connection: shared, prefix });
const channel = chainEventsChannel(prefix);
const publish = (event: ChainEvent) => shared.publish(channel, JSON.stringify(event));

const connections: Redis[] = [];
const workerOptions = () => {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  connections.push(connection);
  return { connection, prefix, concurrency, lockDuration, stalledInterval, maxStalledCount: 10 };
};

const workerA = new Worker<ChainJobData>(
  baselineQueueA,
  async (job) => {
    const data = job.data;
    await publish({ chain: data.chain, step: data.step, kind: "start" });
    if (data.step >= data.steps) {
      await publish({ chain: data.chain, step: data.step, kind: "end" });
      return;
    }
    await queueB.add("b", data, chainJobOptions("b", data));
  },
  workerOptions(),
);
const workerB = new Worker<ChainJobData>(
  baselineQueueB,
  async (job) => {
    const next = { ...job.data, step: job.data.step + 1 };
    await queueA.add("a", next, chainJobOptions("a", next));
  },
  workerOptions(),
);
for (const worker of [workerA, workerB]) {
  worker.on("failed", (job, error) => console.error(`baseline job ${job?.id} failed: ${error.message}`));
  worker.on("error", (error) => console.error(`baseline worker error: ${error.message}`));
}
await Promise.all([workerA.waitUntilReady(), workerB.waitUntilReady()]);
console.log(`BASELINE_WORKER_READY pid=${process.pid}`);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await Promise.all([workerA.close(), workerB.close()]);
  await Promise.all([queueA.close(), queueB.close()]);
  for (const connection of connections) connection.disconnect();
  shared.disconnect();
  process.exit(0);
}
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
