import { randomBytes, randomInt } from "node:crypto";
import { access, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { execa } from "execa";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { TenantId } from "../../src/ids.js";
import { ApiClient, script, textOf } from "../helpers/api-client.js";
import { expectValidHistory } from "../helpers/history.js";
import { spawnNodeProcess, type SpawnedProcess } from "../helpers/processes.js";
import { dropRedisPrefix, repoRoot } from "../helpers/test-env.js";

/**
 * SPEC X8 (operations): the image runs compiled JavaScript, not tsx. `npm run build` compiles
 * src/ into a scratch folder beside package.json (where dist/ is, so drizzle/ and node_modules
 * are found the same way), and the compiled entry points, with nothing preloaded, migrate a
 * fresh database and serve a run end to end: API, worker, file tools and sandboxed bash.
 */
const suffix = randomBytes(5).toString("hex");
const outDir = path.join(repoRoot, `.tmp-build-${suffix}`, "dist");
const databaseName = `foya_test_${suffix}`;
const queuePrefix = `foya-test-${suffix}`;
const adminToken = "test-admin-token";
const scratch: string[] = [];
let env: Record<string, string>;
let databaseCreated = false;
let service: SpawnedProcess | undefined;

beforeAll(async () => {
  // The package's own build script, only the output folder moved. Types are checked once, by
  // `npm run typecheck` before the suite; here the emit is what is under test (`--noCheck`: a
  // third of the time, on a suite that is short of CPU).
  await execa("npm", ["run", "build", "--", "--outDir", outDir, "--noCheck"], { cwd: repoRoot });
  const admin = new pg.Client({ connectionString: inject("databaseUrl") });
  await admin.connect();
  await admin.query(`create database ${databaseName}`);
  databaseCreated = true;
  await admin.end();
  const url = new URL(inject("databaseUrl"));
  url.pathname = `/${databaseName}`;
  const workspaces = await mkdtemp(path.join(tmpdir(), "foya-ws-"));
  const heartbeats = await mkdtemp(path.join(tmpdir(), "foya-heartbeat-"));
  scratch.push(workspaces, heartbeats);
  env = {
    DATABASE_URL: url.toString(),
    REDIS_URL: inject("redisUrl"),
    FOYA_QUEUE_PREFIX: queuePrefix,
    FOYA_WORKSPACES_DIR: workspaces,
    FOYA_ADMIN_TOKEN: adminToken,
    FOYA_TOOL_UID_BASE: String(1_100_000_000 + randomInt(0, 900_000) * 1000),
    FOYA_WORKER_HEARTBEAT_FILE: path.join(heartbeats, "worker.heartbeat"),
    LOG_LEVEL: "warn",
    // Nothing preloaded (no tsx): the compiled JavaScript alone, as in the image.
    NODE_OPTIONS: "",
  };
}, 300_000);

afterAll(async () => {
  if (service) {
    service.kill("SIGKILL");
    await service.exited;
  }
  if (databaseCreated) {
    const admin = new pg.Client({ connectionString: inject("databaseUrl") });
    await admin.connect();
    await admin.query(`drop database if exists ${databaseName} with (force)`);
    await admin.end();
    await dropRedisPrefix(inject("redisUrl"), queuePrefix);
  }
  for (const folder of [path.dirname(outDir), ...scratch]) await rm(folder, { recursive: true, force: true });
});

/** Runs a compiled entry to its end; answers its exit code and output. */
async function runCompiled(entry: string): Promise<{ code: number | undefined; output: string }> {
  const child = spawnNodeProcess([path.join(outDir, entry)], env, entry);
  const { code } = await child.exited;
  return { code, output: child.output() };
}

describe("production build", () => {
  it("X8: npm run build compiles every entry point the image and docker-compose.yml name", async () => {
    for (const entry of ["main.js", "api/main.js", "worker/main.js", "db/migrate-cli.js", "health/worker-healthcheck.js"]) {
      await expect(access(path.join(outDir, entry)), entry).resolves.toBeUndefined();
    }
  });

  it("X8: compiled migrate-cli.js and main.js migrate a fresh database and serve a run with the scripted model; the compiled health check passes; SIGTERM drains", async () => {
    // The compose one-shot: drizzle/ is found from the compiled code.
    const migrated = await runCompiled("db/migrate-cli.js");
    expect(migrated, migrated.output).toMatchObject({ code: 0 });
    expect(migrated.output).toContain("migrations applied");

    service = spawnNodeProcess([path.join(outDir, "main.js")], env, "compiled main.js");
    const [, url] = await service.waitForOutput(/FOYA_API_URL=(\S+)/, 60_000);
    await service.waitForOutput(/FOYA_WORKER_ID=\S+/, 30_000);

    const admin = ApiClient.forUrl(url as string, adminToken);
    const created = await admin.post<{ tenant: { id: TenantId }; apiKey: string }>("/v1/tenants", { name: "compiled" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const tenant = ApiClient.forUrl(url as string, created.body.apiKey, created.body.tenant.id);
    const { sessionId } = await tenant.newSession();
    const run = await tenant.startRun(
      sessionId,
      script([
        [{ text: "Writing." }, { tool: "write", args: { path: "built.txt", content: "from dist\n" } }],
        [{ tool: "read", args: { path: "built.txt" } }],
        [{ tool: "bash", args: { command: "cat built.txt" } }],
        [{ text: "compiled and served" }],
      ]),
    );
    expect(run.status, JSON.stringify(run.body)).toBe(202);
    const ended = await tenant.waitForRun(run.body.id, 60_000);
    expect(ended.status, JSON.stringify(ended)).toBe("completed");

    const messages = await tenant.messages(sessionId);
    expectValidHistory(messages);
    const tools = messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(tools.map((t) => [t.name, t.isError])).toEqual([
      ["write", false],
      ["read", false],
      ["bash", false],
    ]);
    expect(textOf(tools[1])).toContain("from dist");
    expect(textOf(tools[2])).toContain("from dist");
    expect(messages.at(-1)).toMatchObject({ role: "assistant" });
    expect(JSON.stringify(messages.at(-1)?.content)).toContain("compiled and served");

    // The compose worker's health check, compiled: the running worker's heartbeat is fresh.
    const health = await runCompiled("health/worker-healthcheck.js");
    expect(health, health.output).toMatchObject({ code: 0 });

    service.kill("SIGTERM");
    expect(await service.exited).toMatchObject({ code: 0 });
  }, 180_000);
});
