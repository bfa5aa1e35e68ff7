import path from "node:path";
import type { Config } from "../../src/config.js";
import { baselineReadyMarker } from "./baseline-shared.js";
import type { BenchEnv } from "./bench-env.js";
import { startBenchProcess, type BenchProcess } from "./processes.js";

/**
 * The two kinds of worker process a benchmark starts: a Foya worker (`src/worker/main.ts`,
 * as `npm run worker` runs it) and a bare-BullMQ baseline worker with the same worker
 * settings (concurrency, lock, stalled interval) as Foya's.
 */

/** `--cpu-prof` flags for worker processes when BENCH_CPU_PROFILE_DIR is set, one folder per worker. */
function profileArgs(label: string): string[] {
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  // Node names each file CPU.<date>.<pid>.<thread>...; the loader-hooks thread writes its own file.
  return dir ? ["--cpu-prof", "--cpu-prof-dir", path.resolve(dir, label)] : [];
}

/** `env` is the bench env's; the bench process migrates, so workers must not race to. */
export function startFoyaWorker(env: Record<string, string>, label: string): Promise<BenchProcess> {
  return startBenchProcess({
    label,
    entry: "src/worker/main.ts",
    env: { ...env, FOYA_MIGRATE_ON_START: "false" },
    readyMarker: /FOYA_WORKER_ID=\S+/,
    nodeArgs: profileArgs(label),
  });
}

export function startBaselineWorker(benchEnv: BenchEnv, config: Config, label: string): Promise<BenchProcess> {
  return startBenchProcess({
    label,
    entry: "bench/support/baseline-worker.ts",
    env: {
      REDIS_URL: benchEnv.redisUrl,
      BENCH_BASELINE_PREFIX: benchEnv.baselinePrefix,
      // The same worker settings Foya's workers run with.
      BENCH_CONCURRENCY: String(config.workers.stepConcurrency),
      BENCH_LOCK_MS: String(config.workers.leaseMs),
      BENCH_STALLED_MS: String(config.workers.stalledIntervalMs),
    },
    readyMarker: baselineReadyMarker,
    nodeArgs: profileArgs(label),
  });
}
