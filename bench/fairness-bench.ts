/**
 * Fairness benchmark (SPEC X5): tenant A floods 500 runs (one step calling a 50 ms tool,
 * then a final step), tenant B starts one run at a time at a steady pace. Reported:
 *
 * - B's run latency (created to ended, from the run rows) on an idle service, during A's
 *   flood with the per-tenant admission (A's `activeRuns` quota), and during the same flood
 *   with A's quota lifted (`PATCH /v1/tenants/:id {"quotas": {"activeRuns": 100000}}`), which is
 *   the plain FIFO every run shared before X5;
 * - A's throughput (runs per second) alone and with B running beside it.
 *
 * API and one worker in this process, scripted zero-latency model, Full Access sessions (no
 * approvals in the way). Results: stdout and bench/results/fairness.json. Knobs:
 * BENCH_FAIR_A_RUNS (500), BENCH_FAIR_B_INTERVAL_MS (250: more samples than one a second),
 * BENCH_FAIR_CONCURRENCY (16 step and 16 tool slots), BENCH_FAIR_ACTIVE_RUNS (16, A's and B's quota).
 */
import { createApp } from "../src/api/app.js";
import type { App } from "../src/api/app-env.js";
import { loadConfig } from "../src/config.js";
import { createServices, type Services } from "../src/services.js";
import { startWorkerRuntime, type WorkerRuntime } from "../src/worker/worker-runtime.js";
import { createBenchEnv, type BenchEnv } from "./support/bench-env.js";
import { apiCall, startRunInNewSession, waitForRuns, writeBenchResult } from "./support/in-process-api.js";
import { envInt } from "./support/env-int.js";
import { distribution, round, type Distribution } from "./support/stats.js";

const aRuns = envInt("BENCH_FAIR_A_RUNS", 500, 100_000);
const bIntervalMs = envInt("BENCH_FAIR_B_INTERVAL_MS", 250, 60_000);
const concurrency = envInt("BENCH_FAIR_CONCURRENCY", 16, 512);
const activeRuns = envInt("BENCH_FAIR_ACTIVE_RUNS", 16, 100_000);
const script = (steps: unknown[][]) => JSON.stringify({ script: steps });
const aInput = script([[{ tool: "marker_sleep", args: { marker: "a", sleepMs: 50 } }], [{ text: "done" }]]);
const bInput = script([[{ tool: "marker_sleep", args: { marker: "b", sleepMs: 50 } }], [{ text: "done" }]]);

interface Tenant {
  id: string;
  key: string;
  projectId: string;
}

async function tenant(app: App, admin: string, name: string): Promise<Tenant> {
  const created = await apiCall<{ apiKey: string; tenant: { id: string } }>(app, admin, "POST", "/v1/tenants", { name });
  await apiCall(app, admin, "PATCH", `/v1/tenants/${created.tenant.id}`, { fullAccess: true });
  const project = await apiCall<{ id: string }>(app, created.apiKey, "POST", "/v1/projects", { name });
  return { id: created.tenant.id, key: created.apiKey, projectId: project.id };
}

const startRun = (app: App, owner: Tenant, input: string) => startRunInNewSession(app, owner.key, owner.projectId, input);
const waitForAll = (services: Services, runIds: readonly string[]) => waitForRuns(services, runIds, 20);

/** A's flood, optionally with B's steady runs beside it until the flood is done. */
async function flood(app: App, services: Services, a: Tenant, b: Tenant | null): Promise<{ aRunsPerSecond: number; bLatencies: number[] }> {
  const started = performance.now();
  const aIds = await Promise.all(Array.from({ length: aRuns }, () => startRun(app, a, aInput)));
  let done = false;
  const bIds: string[] = [];
  const pacing = (async () => {
    while (b && !done) {
      bIds.push(await startRun(app, b, bInput));
      await new Promise((resolve) => setTimeout(resolve, bIntervalMs));
    }
  })();
  await waitForAll(services, aIds);
  const seconds = (performance.now() - started) / 1000;
  done = true;
  await pacing;
  return { aRunsPerSecond: aRuns / seconds, bLatencies: bIds.length > 0 ? await waitForAll(services, bIds) : [] };
}

let benchEnv: BenchEnv | undefined;
let services: Services | undefined;
let worker: WorkerRuntime | undefined;
try {
  benchEnv = await createBenchEnv({ maxStepsPerRun: 10, concurrency });
  benchEnv.env.FOYA_QUOTA_ACTIVE_RUNS = String(activeRuns);
  // One client makes every request here: the per-key rate limit (S10) is not what is measured.
  benchEnv.env.FOYA_API_RATE_LIMIT = "1000000";
  const config = loadConfig(benchEnv.env);
  services = await createServices(config, { role: "bench" });
  const app = createApp(services);
  const admin = config.api.adminToken ?? "";
  const a = await tenant(app, admin, "flooding tenant");
  const b = await tenant(app, admin, "steady tenant");
  worker = await startWorkerRuntime(services);
  const live = services;

  // Warm-up, then B alone on the idle service, at the same pace.
  await waitForAll(live, await Promise.all(Array.from({ length: 20 }, () => startRun(app, a, aInput))));
  const idle: string[] = [];
  for (let i = 0; i < 40; i++) {
    idle.push(await startRun(app, b, bInput));
    await new Promise((resolve) => setTimeout(resolve, bIntervalMs));
  }
  const bIdle = await waitForAll(live, idle);
  const alone = await flood(app, live, a, null);
  const fair = await flood(app, live, a, b);
  // The same flood with A's admission lifted: every run goes straight into the shared FIFO queues.
  await apiCall(app, admin, "PATCH", `/v1/tenants/${a.id}`, { quotas: { activeRuns: 100_000 } });
  const fifo = await flood(app, live, a, b);

  const d = (values: number[]): Distribution => distribution(values);
  const shown = (x: Distribution) => ({ count: x.count, p50: round(x.p50), p90: round(x.p90), p99: round(x.p99), max: round(x.max) });
  const idleD = d(bIdle);
  const fairD = d(fair.bLatencies);
  const fifoD = d(fifo.bLatencies);
  const report = {
    date: new Date().toISOString(),
    settings: { aRuns, bIntervalMs, concurrency, activeRuns },
    bLatencyMs: { idle: shown(idleD), duringFloodFair: shown(fairD), duringFloodFifo: shown(fifoD) },
    bP99VersusIdle: { fair: round(fairD.p99 / idleD.p99), fifo: round(fifoD.p99 / idleD.p99) },
    aRunsPerSecond: { alone: round(alone.aRunsPerSecond), withB: round(fair.aRunsPerSecond), withBFifo: round(fifo.aRunsPerSecond) },
    aThroughputVersusAlone: round(fair.aRunsPerSecond / alone.aRunsPerSecond),
  };
  console.log(
    `fairness (X5): A floods ${aRuns} runs (a 50 ms tool each), B starts one every ${bIntervalMs} ms; ${concurrency} step and tool slots, activeRuns quota ${activeRuns}`,
  );
  console.log(
    `  B latency, idle service             p50 ${report.bLatencyMs.idle.p50} ms, p99 ${report.bLatencyMs.idle.p99} ms (${idleD.count} runs)`,
  );
  console.log(
    `  B latency, during A's flood          p50 ${report.bLatencyMs.duringFloodFair.p50} ms, p99 ${report.bLatencyMs.duringFloodFair.p99} ms (${fairD.count} runs): p99 ${report.bP99VersusIdle.fair}× idle`,
  );
  console.log(
    `  B latency, same flood, plain FIFO    p50 ${report.bLatencyMs.duringFloodFifo.p50} ms, p99 ${report.bLatencyMs.duringFloodFifo.p99} ms (${fifoD.count} runs): p99 ${report.bP99VersusIdle.fifo}× idle`,
  );
  console.log(
    `  A throughput: alone ${report.aRunsPerSecond.alone} runs/s, with B ${report.aRunsPerSecond.withB} runs/s (${report.aThroughputVersusAlone}×), FIFO with B ${report.aRunsPerSecond.withBFifo} runs/s`,
  );
  writeBenchResult("fairness", report);
} finally {
  await worker?.close();
  await services?.close();
  await benchEnv?.destroy();
}
