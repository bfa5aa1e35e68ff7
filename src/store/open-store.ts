import { openDatabase, type OpenDatabaseOptions } from "../db/client.js";
import { runMigrations } from "../db/migrate.js";
import { createStore, type Store, type StoreBatches } from "./store.js";

/**
 * A Store on a pool of its own, and what only the pool's opener may do with it: migrate the
 * database and end the pool. The composition root opens one per process (src/services.ts); a
 * worker's liveness record opens one of a single connection, which a busy shared pool cannot
 * starve (src/worker/liveness.ts). Neither hands the pool to anyone: callers get `store`.
 */
export interface OpenedStore {
  store: Store;
  /** Applies the migrations in `migrationsFolder` (src/db/migrate.ts), one process at a time. */
  migrate(migrationsFolder: string): Promise<void>;
  /** Ends the pool, once its last query has answered. */
  close(): Promise<void>;
}

export function openStore(databaseUrl: string, options: OpenDatabaseOptions & { batches?: StoreBatches } = {}): OpenedStore {
  const { batches, ...pool } = options;
  const handle = openDatabase(databaseUrl, pool);
  return {
    store: createStore(handle.pool, batches),
    migrate: (migrationsFolder) => runMigrations(handle, migrationsFolder),
    close: () => handle.close(),
  };
}
