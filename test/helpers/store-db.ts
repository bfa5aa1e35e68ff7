import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { inject } from "vitest";
import { openDatabase } from "../../src/db/client.js";
import { runMigrations } from "../../src/db/migrate.js";
import { newId, type ProjectId, type SessionId, type TenantId } from "../../src/ids.js";
import { createStore, type Store } from "../../src/store/store.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * A Postgres database of its own with the migrations applied and a Store on it: what the store's
 * contract tests (test/store/) run against. No Redis, no queues, no worker: the statements alone.
 */
export interface StoreDb {
  store: Store;
  /** Plain SQL on the test database, to look at rows (and, rarely, to put one in a state no statement reaches). */
  query<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<T[]>;
  /** A new tenant with a project and a session, for one test. */
  newSession(): Promise<{ tenantId: TenantId; projectId: ProjectId; sessionId: SessionId }>;
  close(): Promise<void>;
}

/** Where `newSession` places its project: what store tests claim batches with. */
export const testPlacement = { hostId: "test-host", epoch: 1 };

export async function createStoreDb(): Promise<StoreDb> {
  const adminUrl = inject("databaseUrl");
  const databaseName = `foya_test_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${databaseName}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${databaseName}`;
  const handle = openDatabase(url.toString(), { max: 8 });
  await runMigrations(handle, path.join(repoRoot, "drizzle"));
  const store = createStore(handle.pool);
  return {
    store,
    async query(text, values) {
      return (await handle.pool.query(text, values)).rows;
    },
    async newSession() {
      const tenant = await store.tenants.insertTenantWithKey("tenant", { hash: randomBytes(16).toString("hex"), prefix: "foya_test" });
      const project = await store.projects.insertProject({
        id: newId("prj"),
        tenantId: tenant.id,
        name: "p",
        workspacePath: "/nonexistent",
      });
      if (!project) throw new Error("project insert returned nothing");
      const session = await store.sessions.insertSession({
        id: newId("ses"),
        tenantId: tenant.id,
        projectId: project.id,
        approvalMode: "auto",
        providerProfile: "scripted",
        runMode: "normal",
      });
      if (!session) throw new Error("session insert returned nothing");
      // Batches claim their run only where the project is placed (SPEC W3).
      await handle.pool.query("insert into project_placements (project_id, tenant_id, host_id, epoch) values ($1, $2, $3, $4)", [
        project.id,
        tenant.id,
        testPlacement.hostId,
        testPlacement.epoch,
      ]);
      return { tenantId: tenant.id, projectId: project.id, sessionId: session.id };
    },
    async close() {
      await handle.close();
      const dropper = new pg.Client({ connectionString: adminUrl });
      await dropper.connect();
      await dropper.query(`drop database if exists ${databaseName} with (force)`);
      await dropper.end();
    },
  };
}
