import pg from "pg";

/**
 * A small pool of a test's own on a test database, for plain SQL beside the services: they keep
 * their pool inside the store (src/store/open-store.ts), which hands it to nobody. End it before
 * the database is dropped; its idle connections never hold the process open.
 */
export function openTestPool(databaseUrl: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 5, allowExitOnIdle: true });
  // A connection cut by the database's drop is no failure of the test.
  pool.on("error", () => {});
  return pool;
}
