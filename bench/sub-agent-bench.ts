/**
 * Sub-agent benchmark (SPEC A1): what delegating costs. A parent run whose first step
 * calls `agent` (the child answers in one step) against the same parent calling the
 * no-op `noop` tool instead, in the same run of the benchmark, with the scripted
 * zero-latency model, API and worker in this process.
 * - Latency: runs one at a time; a run's time is `ended_at - created_at` from its row.
 * - Throughput: `BENCH_AGENT_PARALLEL` (32) runs at once, each in its own session.
 * Results: stdout and bench/results/sub-agents.json. Knobs: BENCH_AGENT_RUNS (40).
 */
import { createApp } from "../src/api/app.js";
import { loadConfig } from "../src/config.js";
import { createServices, type Services } from "../src/services.js";
import { startWorkerRuntime, type WorkerRuntime } from "../src/worker/worker-runtime.js";
import { createBenchEnv, type BenchEnv } from "./support/bench-env.js";
import { apiCall, startRunInNewSession, waitForRuns, writeBenchResult } from "./support/in-process-api.js";
import { envInt } from "./support/env-int.js";
import { distribution, round } from "./support/stats.js";

const runsEach = envInt("BENCH_AGENT_RUNS", 40, 1000);
const parallel = envInt("BENCH_AGENT_PARALLEL", 32, 512);
const script = (steps: unknown[][]) => JSON.stringify({ script: steps });
const delegating = script([[{ tool: "agent", args: { task: script([[{ text: "child answer" }]]) } }], [{ text: "parent done" }]]);
const plain = script([[{ tool: "noop", args: {} }], [{ text: "parent done" }]]);

let benchEnv: BenchEnv | undefined;
let services: Services | undefined;
let worker: WorkerRuntime | undefined;
try {
  benchEnv = await createBenchEnv({ maxStepsPerRun: 10, concurrency: 64 });
  const config = loadConfig(benchEnv.env);
  services = await createServices(config, { role: "bench" });
  const app = createApp(services);
  const tenant = await apiCall<{ apiKey: string; tenant: { id: string } }>(app, config.api.adminToken ?? "", "POST", "/v1/tenants", {
    name: "sub-agent-bench",
  });
  // Its sessions use Full Access (no approvals in the way): the operator's grant (SPEC S8).
  await apiCall(app, config.api.adminToken ?? "", "PATCH", `/v1/tenants/${tenant.tenant.id}`, { fullAccess: true });
  const project = await apiCall<{ id: string }>(app, tenant.apiKey, "POST", "/v1/projects", { name: "sub-agent-bench" });
  worker = await startWorkerRuntime(services);
  const live = services;

  const one = async (input: string) => (await waitForRuns(live, [await startRunInNewSession(app, tenant.apiKey, project.id, input)]))[0]!;
  for (let i = 0; i < 5; i++) await Promise.all([one(delegating), one(plain)]);

  const latency = { delegating: [] as number[], plain: [] as number[] };
  for (let i = 0; i < runsEach; i++) {
    // Alternate which goes first, so both see the same load.
    if (i % 2 === 0) {
      latency.delegating.push(await one(delegating));
      latency.plain.push(await one(plain));
    } else {
      latency.plain.push(await one(plain));
      latency.delegating.push(await one(delegating));
    }
  }
  const throughput = async (input: string) => {
    const started = performance.now();
    const ids = await Promise.all(Array.from({ length: parallel }, () => startRunInNewSession(app, tenant.apiKey, project.id, input)));
    await waitForRuns(live, ids);
    return parallel / ((performance.now() - started) / 1000);
  };
  const plainRate = await throughput(plain);
  const delegatingRate = await throughput(delegating);

  const d = distribution(latency.delegating);
  const p = distribution(latency.plain);
  const report = {
    date: new Date().toISOString(),
    runsEach,
    parallel,
    latencyMs: {
      delegating: { p50: round(d.p50), p90: round(d.p90), p99: round(d.p99), mean: round(d.mean) },
      plainTool: { p50: round(p.p50), p90: round(p.p90), p99: round(p.p99), mean: round(p.mean) },
      addedP50: round(d.p50 - p.p50),
      ratioP50: round(d.p50 / p.p50),
    },
    runsPerSecond: { delegating: round(delegatingRate), plainTool: round(plainRate), ratio: round(delegatingRate / plainRate) },
  };
  console.log(`sub-agent benchmark: ${runsEach} runs each one at a time, then ${parallel} at once (scripted model, in-process worker)`);
  console.log(
    `  run with one agent call (child: one step)   p50 ${report.latencyMs.delegating.p50} ms, p99 ${report.latencyMs.delegating.p99} ms`,
  );
  console.log(
    `  run with one noop call instead              p50 ${report.latencyMs.plainTool.p50} ms, p99 ${report.latencyMs.plainTool.p99} ms`,
  );
  console.log(`  delegation adds ${report.latencyMs.addedP50} ms at p50 (${report.latencyMs.ratioP50}×)`);
  console.log(
    `  ${parallel} runs at once: ${report.runsPerSecond.delegating} delegating runs/s vs ${report.runsPerSecond.plainTool} plain runs/s (${report.runsPerSecond.ratio}×)`,
  );
  writeBenchResult("sub-agents", report);
} finally {
  await worker?.close();
  await services?.close();
  await benchEnv?.destroy();
}
