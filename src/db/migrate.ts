import { migrate } from "drizzle-orm/node-postgres/migrator";
import type { DbHandle } from "./client.js";

/** Arbitrary constant: serializes migrations when several processes start at once. */
const migrationLockKey = 0x466f7961;

/** Applies the migrations in `migrationsFolder`: the service's `drizzle/`, which the callers find beside package.json (`findServiceDir`). */
export async function runMigrations(handle: DbHandle, migrationsFolder: string): Promise<void> {
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
