import path from "node:path";
import { fileURLToPath } from "node:url";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import type { DbHandle } from "./client.js";

const migrationsFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../drizzle");

/** Arbitrary constant: serializes migrations when several processes start at once. */
const migrationLockKey = 0x466f7961;

export async function runMigrations(handle: DbHandle): Promise<void> {
  const client = await handle.pool.connect();
  try {
    await client.query("select pg_advisory_lock($1)", [migrationLockKey]);
    try {
      await migrate(handle.db, { migrationsFolder });
    } finally {
      await client.query("select pg_advisory_unlock($1)", [migrationLockKey]);
    }
  } finally {
    client.release();
  }
}
