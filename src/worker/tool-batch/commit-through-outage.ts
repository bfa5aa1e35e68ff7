import { setTimeout as sleep } from "node:timers/promises";
import { isConnectionError } from "../../startup/dependency-wait.js";

/**
 * Runs a fenced commit again while Postgres is unreachable, for at most one lease (SPEC D3,
 * D9). What it records, a tool's result, is already done and cannot be done again; the fence
 * makes a late attempt safe: once the lease has lapsed and another worker has classified the
 * call, the commit is refused as stale instead of landing twice. Any other error is thrown at
 * once, as is the last connection error when the lease is over.
 */
export async function commitThroughOutage<T>(
  attempt: () => Promise<T>,
  options: { leaseMs: number; onWait(error: unknown, retryInMs: number): void },
): Promise<T> {
  const deadline = Date.now() + options.leaseMs;
  for (let delayMs = 250; ; delayMs = Math.min(delayMs * 2, 2000)) {
    try {
      return await attempt();
    } catch (error) {
      if (!isConnectionError(error) || Date.now() + delayMs > deadline) throw error;
      options.onWait(error, delayMs);
      await sleep(delayMs);
    }
  }
}
