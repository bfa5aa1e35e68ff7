import { randomBytes, randomInt } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import type pg from "pg";
import { Redis } from "ioredis";
import { Queue } from "bullmq";
import { webhookQueueName } from "../../src/webhooks/webhook-queue.js";
import { afterAll, beforeAll, inject } from "vitest";
import { createApp } from "../../src/api/app.js";
import { openTestPool } from "./test-pool.js";
import type { App } from "../../src/api/app-env.js";
import { startHttpServer, type HttpServer } from "../../src/api/http-server.js";
import { loadConfig, type Config } from "../../src/config.js";
import { createServices, type CreateServicesOptions, type Services } from "../../src/services.js";
import { startWorkerRuntime, type WorkerRuntime } from "../../src/worker/worker-runtime.js";
import type { TenantId } from "../../src/ids.js";
import { createWorkspaceFolder } from "../../src/workspace/project-workspace.js";
import { toolIdentity } from "../../src/sandbox/tool-identity.js";
import { ApiClient } from "./api-client.js";
import { dropDatabase, takeDatabase } from "./test-databases.js";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const testToolsModule = path.join(repoRoot, "test/fixtures/test-tools.ts");

/**
 * One isolated Foya for a test file: its own database, queue prefix and
 * workspace folder, on the real Postgres and Redis. Timings are shortened so
 * crash recovery (leases, stalls, sweeps) happens within seconds.
 */
export interface TestEnv {
  env: Record<string, string>;
  config: Config;
  services: Services;
  app: App;
  admin: ApiClient;
  /**
   * A new tenant with its own key; `fullAccess` has the operator grant it Full Access
   * (`PATCH /v1/tenants/{id}`), which the test deployment allows (SPEC S8).
   */
  newTenant(name?: string, options?: NewTenantOptions): Promise<ApiClient>;
  startWorker(): Promise<WorkerRuntime>;
  startServer(): Promise<HttpServer>;
  /** The workspace folder of a session's project. */
  workspaceOf(sessionId: string): Promise<string>;
  /**
   * Resolves once nothing more can happen on its own: no step, tool-batch or webhook job of this
   * environment is waiting, delayed or running, and no webhook delivery waits to be enqueued.
   * Tests wait on it before asserting that something did not happen, instead of sleeping.
   */
  settled(timeoutMs?: number): Promise<void>;
  /** Plain SQL on the test database. */
  query<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export interface NewTenantOptions {
  fullAccess?: boolean;
}

/** A providers file (FOYA_PROVIDERS_FILE) in a folder of its own, holding these profiles. */
export async function writeProvidersFile(profiles: object[]): Promise<string> {
  const file = path.join(await mkdtemp(path.join(tmpdir(), "foya-providers-")), "providers.json");
  await writeFile(file, JSON.stringify({ profiles }));
  return file;
}

/** `services` reaches createServices: a test's own logger (captured lines) or span processors. */
export async function createTestEnv(
  overrides: Record<string, string> = {},
  servicesOptions: Omit<CreateServicesOptions, "role"> = {},
): Promise<TestEnv> {
  const redisUrl = inject("redisUrl");
  const suffix = randomBytes(5).toString("hex");
  const runDatabases = inject("runDatabases");
  const database = await takeDatabase(runDatabases);
  const workspaces = await mkdtemp(path.join(tmpdir(), "foya-ws-"));
  const env: Record<string, string> = {
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    FOYA_QUEUE_PREFIX: `foya-test-${suffix}`,
    FOYA_WORKSPACES_DIR: workspaces,
    FOYA_ADMIN_TOKEN: "test-admin-token",
    // The deployment allows Full Access; each tenant still needs the grant (newTenant's fullAccess).
    FOYA_ALLOW_FULL_ACCESS: "true",
    FOYA_TOOL_MODULES: testToolsModule,
    // Every test database numbers its tenants from slot 1, and test files run side by side on one
    // host: a base of its own keeps one file's tool uids (and what a test finds running as them) its own.
    FOYA_TOOL_UID_BASE: String(1_100_000_000 + randomInt(0, 900_000) * 1000),
    // Three files run side by side, each with its services and the processes it starts: smaller
    // pools keep the run under Postgres's default 100 connections.
    FOYA_DATABASE_POOL_SIZE: "8",
    FOYA_LEASE_MS: "2000",
    FOYA_STALLED_INTERVAL_MS: "1000",
    FOYA_SWEEP_INTERVAL_MS: "300",
    FOYA_SWEEP_GRACE_MS: "1000",
    FOYA_SHUTDOWN_GRACE_MS: "3000",
    FOYA_SSE_KEEPALIVE_MS: "1000",
    LOG_LEVEL: "error",
    PORT: "0",
    ...overrides,
  };
  const config = loadConfig(env);
  const services = await createServices(config, { role: "test", ...servicesOptions });
  const app = createApp(services);
  const closers: Array<() => Promise<unknown>> = [];
  const pool = openTestPool(config.database.url);
  closers.push(() => pool.end());
  const webhookQueue = new Queue(webhookQueueName, { connection: services.redis, prefix: config.redis.queuePrefix });
  webhookQueue.on("error", () => {});

  const testEnv: TestEnv = {
    env,
    config,
    services,
    app,
    admin: ApiClient.forApp(app, config.api.adminToken ?? ""),
    async newTenant(name = "tenant", options = {}) {
      const created = await testEnv.admin.post<{ tenant: { id: TenantId }; apiKey: string }>("/v1/tenants", { name });
      if (created.status !== 201) throw new Error(`tenant creation failed: ${JSON.stringify(created.body)}`);
      const tenantId = created.body.tenant.id;
      if (options.fullAccess) {
        const granted = await testEnv.admin.patch(`/v1/tenants/${tenantId}`, { fullAccess: true });
        if (granted.status !== 200) throw new Error(`Full Access grant failed: ${JSON.stringify(granted.body)}`);
      }
      return ApiClient.forApp(app, created.body.apiKey, tenantId);
    },
    async startWorker() {
      const worker = await startWorkerRuntime(services);
      closers.unshift(() => worker.close());
      return worker;
    },
    async startServer() {
      const server = await startHttpServer(services, { port: 0 });
      closers.unshift(() => server.close());
      return server;
    },
    async workspaceOf(sessionId) {
      const { rows } = await pool.query<{ workspace_path: string; tenant_id: TenantId; project_id: string }>(
        "select p.workspace_path, p.tenant_id, p.id as project_id from sessions s join projects p on p.id = s.project_id where s.id = $1",
        [sessionId],
      );
      const row = rows[0];
      if (!row) throw new Error(`no session ${sessionId}`);
      // The project's first host makes the folder for its first batch (SPEC W3); a test that writes
      // files before that makes it here, the tenant's as a host makes it, and the first placement adopts it.
      const settings = await services.tenantSettings.get(row.tenant_id);
      await createWorkspaceFolder(
        services.config.workspaces.dir,
        [row.tenant_id, row.project_id],
        toolIdentity(services.identityMode, settings.toolUidSlot),
      );
      return row.workspace_path;
    },
    async query(text, values) {
      return (await pool.query(text, values)).rows;
    },
    async settled(timeoutMs = 20_000) {
      const queues = [...services.dispatcher.stepQueues, services.dispatcher.toolQueue, webhookQueue];
      const busy = async () => {
        for (const queue of queues) {
          const counts = await queue.getJobCounts("waiting", "prioritized", "delayed", "active");
          if (Object.values(counts).some((count) => count > 0)) return true;
        }
        const { rows } = await pool.query<{ n: number }>("select count(*)::int as n from webhook_deliveries where status = 'pending'");
        return (rows[0]?.n ?? 0) > 0;
      };
      // Twice in a row: a job adds its successor before it completes, so an idle look is no gap between two jobs.
      let idle = 0;
      const deadline = Date.now() + timeoutMs;
      while (idle < 2) {
        if (Date.now() > deadline) throw new Error("timed out waiting for this environment's queues to settle");
        idle = (await busy()) ? 0 : idle + 1;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async close() {
      for (const close of closers) await close().catch(() => {});
      await webhookQueue.close();
      await services.close();
      // The Redis this environment used: an override (a test's own server) or the suite's. A test's
      // own Redis Cluster (test/helpers/redis-cluster.ts) goes away whole, with its nodes.
      if (env.FOYA_REDIS_CLUSTER !== "true") await dropRedisPrefix(env.REDIS_URL ?? redisUrl, env.FOYA_QUEUE_PREFIX as string);
      dropDatabase(runDatabases, database.name);
      // rm -rf walks by descriptor: a test's workspace may hold a tree deeper than a path can name.
      await execa("rm", ["-rf", "--", workspaces]);
    },
  };
  return testEnv;
}

/** Deletes every Redis key under a queue prefix (FOYA_QUEUE_PREFIX). */
export async function dropRedisPrefix(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

/**
 * The usual file setup: one isolated environment with a tenant (and, with
 * `worker`, an in-process worker; with `fullAccess`, the tenant granted Full
 * Access), created before the file's tests and closed after them. The answers
 * may be destructured at once; they resolve on use.
 */
export function useTestEnv(options: { worker?: boolean; overrides?: Record<string, string>; fullAccess?: boolean } = {}): {
  env: TestEnv;
  client: ApiClient;
} {
  let env: TestEnv | undefined;
  let client: ApiClient | undefined;
  beforeAll(async () => {
    env = await createTestEnv(options.overrides);
    if (options.worker) await env.startWorker();
    client = await env.newTenant("tenant", { fullAccess: options.fullAccess ?? false });
  });
  afterAll(async () => env?.close());
  return { env: lateBound(() => env, "env"), client: lateBound(() => client, "client") };
}

function lateBound<T extends object>(current: () => T | undefined, name: string): T {
  return new Proxy({} as T, {
    get(_target, key) {
      const value = current();
      if (!value) throw new Error(`${name} used before the file's beforeAll ran`);
      const member = Reflect.get(value, key, value) as unknown;
      return typeof member === "function" ? member.bind(value) : member;
    },
  });
}
