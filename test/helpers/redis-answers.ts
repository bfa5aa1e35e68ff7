import { Redis } from "ioredis";

/** Whether a Redis answers PING at `url` within `connectTimeoutMs`; never retries, never throws. */
export async function redisAnswers(url: string, connectTimeoutMs = 2000): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: connectTimeoutMs, retryStrategy: () => null });
  redis.on("error", () => {});
  try {
    await redis.connect();
    return (await redis.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}
