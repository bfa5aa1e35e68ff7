import pg from "pg";
import type { Config } from "../../src/config.js";

const pools = new Map<string, pg.Pool>();

/**
 * Plain SQL on a benchmark's database (counts, sizes, the WAL probe, rows put in by hand), on a
 * small pool of its own: the services keep theirs inside the store (src/store/open-store.ts).
 * One per database and process; its idle connections never hold the process open.
 */
export function sqlPool(config: Pick<Config, "database">): pg.Pool {
  const { url } = config.database;
  let pool = pools.get(url);
  if (!pool) {
    pool = new pg.Pool({ connectionString: url, max: 4, allowExitOnIdle: true });
    // A connection cut by the database's drop at the end is no failure of the benchmark.
    pool.on("error", () => {});
    pools.set(url, pool);
  }
  return pool;
}
