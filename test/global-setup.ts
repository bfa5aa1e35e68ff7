import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { buildEntries } from "./helpers/entry-build.js";
import { redisAnswers } from "./helpers/redis-answers.js";
import { createRunDatabases, dropRunDatabases, type RunDatabases } from "./helpers/test-databases.js";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** Admin connection; each test file creates its own database through it. */
    databaseUrl: string;
    /** The run's template database and the prefix of its copies (test/helpers/test-databases.ts). */
    runDatabases: RunDatabases;

    redisUrl: string;
    /** Folder where test/security files record each escape attempt (see test/security/escape-ledger.ts). */
    escapeLedger: string;
    /** The compiled entries test files start as processes (test/helpers/entry-build.ts). */
    entryBuild: string;
  }
}

/**
 * Finds Postgres and Redis: DATABASE_URL and REDIS_URL when set, else the local
 * services. Where neither is set nor answering but Docker is, starts them with
 * testcontainers.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let databaseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  let redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const stops: Array<() => Promise<unknown>> = [];
  const explicitlySet = process.env.DATABASE_URL !== undefined || process.env.REDIS_URL !== undefined;
  if (!explicitlySet && !((await postgresAnswers(databaseUrl)) && (await redisAnswers(redisUrl))) && dockerAnswers()) {
    const { GenericContainer, Wait } = await import("testcontainers");
    const postgres = await new GenericContainer("postgres:16")
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
      .withExposedPorts(5432)
      .withWaitStrategy(Wait.forLogMessage(/ready to accept connections/, 2))
      .start();
    const redis = await new GenericContainer("redis:7").withExposedPorts(6379).start();
    stops.push(
      () => postgres.stop(),
      () => redis.stop(),
    );
    databaseUrl = `postgres://postgres@${postgres.getHost()}:${postgres.getMappedPort(5432)}/postgres`;
    redisUrl = `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`;
  }
  project.provide("databaseUrl", databaseUrl);
  project.provide("redisUrl", redisUrl);
  const ledger = mkdtempSync(path.join(tmpdir(), "foya-escape-ledger-"));
  project.provide("escapeLedger", ledger);
  const [entryBuild, runDatabases] = await Promise.all([
    buildEntries(project.config.root),
    createRunDatabases(databaseUrl, project.config.root),
  ]);
  project.provide("entryBuild", entryBuild);
  project.provide("runDatabases", runDatabases);
  return async () => {
    rmSync(entryBuild, { recursive: true, force: true });
    await dropRunDatabases(runDatabases);
    for (const stop of stops) await stop();
    printEscapeSummary(ledger);
    rmSync(ledger, { recursive: true, force: true });
  };
}

async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query("select 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

function dockerAnswers(): boolean {
  try {
    execFileSync("docker", ["info"], { stdio: "ignore", timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

/** One line for the whole escape suite (SPEC S6-S8): every attempt test/security recorded, and how many got through. */
function printEscapeSummary(ledger: string): void {
  const attempts = readdirSync(ledger)
    .flatMap((file) => readFileSync(path.join(ledger, file), "utf8").split("\n"))
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { name: string; escapeClass: string; breached: boolean });
  if (attempts.length === 0) return;
  const breaches = attempts.filter((attempt) => attempt.breached);
  const perClass = new Map<string, number>();
  for (const { escapeClass } of attempts) perClass.set(escapeClass, (perClass.get(escapeClass) ?? 0) + 1);
  const classes = [...perClass].sort(([a], [b]) => a.localeCompare(b)).map(([name, count]) => `${name} ${count}`);
  console.log(`escape suite: ${attempts.length} attempts in ${perClass.size} classes, ${breaches.length} breaches (${classes.join(", ")})`);
  for (const breach of breaches) console.log(`  breached: ${breach.name}`);
}
