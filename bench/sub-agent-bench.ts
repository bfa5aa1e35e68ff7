/**
 * Sub-agent benchmark (SPEC A1): what delegating costs. A parent run whose first step
 * calls `agent` (the child answers in one step) against the same parent calling the
 * no-op `noop` tool instead, in the same run of the benchmark, with the scripted
 * zero-latency model, API and worker in this process.
 * - Latency: runs one at a time; a run's time is `ended_at - created_at` from its row.
 * - Throughput: `BENCH_AGENT_PARALLEL` (32) runs at once, each in its own session.
 * Results: stdout and bench/results/sub-agents.json. Knobs: BENCH_AGENT_RUNS (40).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createApp } from "../src/api/app.js";
import type { App } from "../src/api/app-env.js";
import { loadConfig } from "../src/config.js";
import { createServices, type Services } from "../src/services.js";
import { startWorkerRuntime, type WorkerRuntime } from "../src/worker/worker-runtime.js";
import { createBenchEnv, type BenchEnv } from "./support/bench-env.js";
import { envInt } from "./support/env-int.js";
import { distribution, round } from "./support/stats.js";

const runsEach = envInt("BENCH_AGENT_RUNS", 40, 1000);
const parallel = envInt("BENCH_AGENT_PARALLEL", 32, 512);
const script = (steps: unknown[][]) => JSON.stringify({ script: steps });
const delegating = script([[{ tool: "agent", args: { task: script([[{ text: "child answer" }]]) } }], [{ text: "parent done" }]]);
const plain = script([[{ tool: "noop", args: {} }], [{ text: "parent done" }]]);

async function call<T>(app: App, key: string, method: string, route: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) };
  const response = await app.request(route, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${route} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

/** Starts one run in a new session; answers its id. */
async function startRun(app: App, key: string, projectId: string, input: string): Promise<string> {
  const session = await call<{ id: string }>(app, key, "POST", "/v1/sessions", { projectId, approvalMode: "full_access" });
  return (await call<{ id: string }>(app, key, "POST", `/v1/sessions/${session.id}/runs`, { input })).id;
}

async function waitForAll(services: Services, runIds: readonly string[]): Promise<number[]> {
  for (;;) {
    const { rows } = await services.db.pool.query<{ status: string; ms: number }>(
      "select status, extract(epoch from (ended_at - created_at)) * 1000 as ms from runs where id = any($1)",
      [runIds],
    );
    if (rows.some((row) => row.status === "failed" || row.status === "interrupted" || row.status === "cancelled")) throw new Error("a run did not complete");
    if (rows.length === runIds.length && rows.every((row) => row.status === "completed")) return rows.map((row) => Number(row.ms));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let benchEnv: BenchEnv | undefined;
let services: Services | undefined;
let worker: WorkerRuntime | undefined;
try {
  benchEnv = await createBenchEnv({ maxStepsPerRun: 10, concurrency: 64 });
  const config = loadConfig(benchEnv.env);
  services = await createServices(config, { role: "bench" });
  const app = createApp(services);
  const tenant = await call<{ apiKey: string; tenant: { id: string } }>(app, config.adminToken ?? "", "POST", "/v1/tenants", { name: "sub-agent-bench" });
  // Its sessions use Full Access (no approvals in the way): the operator's grant (SPEC S8).
  await call(app, config.adminToken ?? "", "PATCH", `/v1/tenants/${tenant.tenant.id}`, { fullAccess: true });
  const project = await call<{ id: string }>(app, tenant.apiKey, "POST", "/v1/projects", { name: "sub-agent-bench" });
  worker = await startWorkerRuntime(services);
  const live = services;

  const one = async (input: string) => (await waitForAll(live, [await startRun(app, tenant.apiKey, project.id, input)]))[0]!;
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
    const ids = await Promise.all(Array.from({ length: parallel }, () => startRun(app, tenant.apiKey, project.id, input)));
    await waitForAll(live, ids);
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
  console.log(`  run with one agent call (child: one step)   p50 ${report.latencyMs.delegating.p50} ms, p99 ${report.latencyMs.delegating.p99} ms`);
  console.log(`  run with one noop call instead              p50 ${report.latencyMs.plainTool.p50} ms, p99 ${report.latencyMs.plainTool.p99} ms`);
  console.log(`  delegation adds ${report.latencyMs.addedP50} ms at p50 (${report.latencyMs.ratioP50}×)`);
  console.log(`  ${parallel} runs at once: ${report.runsPerSecond.delegating} delegating runs/s vs ${report.runsPerSecond.plainTool} plain runs/s (${report.runsPerSecond.ratio}×)`);
  const results = path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
  mkdirSync(results, { recursive: true });
  writeFileSync(path.join(results, "sub-agents.json"), `${JSON.stringify(report, null, 2)}\n`);
} finally {
  await worker?.close();
  await services?.close();
  await benchEnv?.destroy();
}
