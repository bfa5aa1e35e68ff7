/**
 * Burst probe: where the time and CPU of 50 runs posted at once go (the first-token burst of
 * bench:core, alone). Runs BURST_PROBE_BURSTS bursts of 50 after a warm-up, one worker process,
 * the API in this process, and prints per burst: POST sent → answered and sent → model request
 * (p50 / p99), and the CPU of the burst per run (Postgres, Redis, worker, this process).
 *
 *   npx tsx bench/burst-probe.ts
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createApp } from "../src/api/app.js";
import { startHttpServer } from "../src/api/http-server.js";
import { loadConfig } from "../src/config.js";
import { createServices } from "../src/services.js";
import { createBenchEnv } from "./support/bench-env.js";
import { startFoyaWorker } from "./support/bench-workers.js";
import { measureCpu } from "./support/cpu-split.js";
import { startFakeModelServer } from "./support/fake-model-server.js";
import { FirstTokenDriver, firstTokenFigures } from "./support/first-token.js";
import { envInt } from "./support/env-int.js";
import { round } from "./support/stats.js";
import pg from "pg";

/** Statements this process (the API) sends, by "verb table", counted like process-probe.ts does for workers. */
const apiStatements: Record<string, number> = {};
const clientProto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
const originalQuery = clientProto.query;
clientProto.query = function countedQuery(this: unknown, ...args: unknown[]): unknown {
  const first = args[0];
  const text = (typeof first === "string" ? first : ((first as { text?: string })?.text ?? "")).trim().toLowerCase();
  const verb = /^[a-z]+/.exec(text)?.[0] ?? "other";
  const table = /\b(?:from|into|update)\s+"?([a-z_]+)"?/.exec(text)?.[1];
  const kind = table ? `${verb} ${table}` : verb;
  apiStatements[kind] = (apiStatements[kind] ?? 0) + 1;
  return originalQuery.apply(this, args);
};
const perRun = (counts: Record<string, number>, n: number) =>
  Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${round(v / n)}`)
    .join(", ");

const bursts = envInt("BURST_PROBE_BURSTS", 6, 50);
const size = envInt("BURST_PROBE_SIZE", 50, 500);
/** The pause between bursts: past the pools' idle time (FOYA_DATABASE_IDLE_MS) each burst meets new connections. */
const pauseMs = envInt("BURST_PROBE_PAUSE_MS", 1500, 600_000);

async function main(): Promise<void> {
  const benchEnv = await createBenchEnv({ maxStepsPerRun: 20, concurrency: 64 });
  const model = await startFakeModelServer();
  const providersDir = await mkdtemp(path.join(tmpdir(), "foya-burst-"));
  const providersFile = path.join(providersDir, "providers.json");
  await writeFile(providersFile, JSON.stringify({ profiles: [{ name: "w", kind: "openai-chat", baseUrl: model.baseUrl, model: "m" }] }));
  benchEnv.env.FOYA_PROVIDERS_FILE = providersFile;
  const config = loadConfig(benchEnv.env);
  const services = await createServices(config, { role: "bench" });
  createApp(services);
  const api = await startHttpServer(services, { port: 0 });
  const worker = await startFoyaWorker(benchEnv.env, "foya-worker-1");
  try {
    const driver = await FirstTokenDriver.create(
      { apiUrl: api.url, adminToken: config.api.adminToken ?? "", profile: "w", model },
      services,
    );
    for (let i = 0; i < 5; i++) await driver.startAll(await driver.createSessions(1), 30_000);
    for (let i = 0; i < 2; i++) await driver.startAll(await driver.createSessions(size), 60_000);
    // Backends of the bench's database, to count the connections each burst opens (a new one is planned afresh).
    const watcher = new pg.Client({ connectionString: benchEnv.env.DATABASE_URL });
    await watcher.connect();
    const backends = async () =>
      new Set(
        (await watcher.query<{ pid: number }>("select pid from pg_stat_activity where datname = current_database()")).rows.map(
          (row) => row.pid,
        ),
      );
    for (let b = 0; b < bursts; b++) {
      const sessions = await driver.createSessions(size);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const before = await backends();
      for (const k of Object.keys(apiStatements)) delete apiStatements[k];
      await worker.resetProbe();
      const { value, cpu } = await measureCpu([worker.pid], () => driver.startAll(sessions, 60_000));
      const opened = [...(await backends())].filter((pid) => !before.has(pid)).length;
      const f = firstTokenFigures(value);
      const per = (ms: number | undefined) => round((ms ?? 0) / size);
      console.log(
        `burst ${b}: answered ${f.postAnswered.p50}/${f.postAnswered.p99}  sent→request ${f.sentToRequest.p50}/${f.sentToRequest.p99} ms;` +
          ` CPU per run: machine ${per(cpu?.machineMs)} = pg ${per(cpu?.postgresMs)} + redis ${per(cpu?.redisMs)} + worker ${per(cpu?.workersMs)} + api/bench ${per(cpu?.benchMs)}`,
      );
      const probe = await worker.readProbe();
      console.log(
        `  worker per run: ${round(probe.queries / size)} statements (${perRun(probe.statements, size)}), ${round(probe.redisCommands / size)} redis commands`,
      );
      console.log(`  api per run: ${perRun(apiStatements, size)}; Postgres connections opened during the burst: ${opened}`);
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    await watcher.end();
  } finally {
    await worker.stop();
    await api.close();
    await services.close();
    await model.close();
    await benchEnv.destroy();
    await rm(providersDir, { recursive: true, force: true });
  }
}

await main();
