import path from "node:path";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import { findServiceDir } from "../sandbox/service-dir.js";
import type { DbHandle } from "./client.js";

/** Arbitrary constant: serializes migrations when several processes start at once. */
const migrationLockKey = 0x466f7961;

export async function runMigrations(handle: DbHandle): Promise<void> {
  const client = await handle.pool.connect();
  try {
    await client.query("select pg_advisory_lock($1)", [migrationLockKey]);
    try {
      // drizzle/ beside package.json: the same folder whether this runs from src/ (tsx) or a compiled outDir.
      await migrate(handle.db, { migrationsFolder: path.join(findServiceDir(), "drizzle") });
    } finally {
      await client.query("select pg_advisory_unlock($1)", [migrationLockKey]);
    }
  } finally {
    client.release();
  }
}
