import pg from "pg";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import * as schema from "./schema.js";

export type Database = NodePgDatabase<typeof schema>;
/** A database handle or an open transaction; store functions accept either. */
export type DbExecutor = Database | Parameters<Parameters<Database["transaction"]>[0]>[0];

export interface DbHandle {
  db: Database;
  pool: pg.Pool;
  close(): Promise<void>;
}

/** Connections a pool opens at most, unless told otherwise. */
export const defaultPoolSize = 20;

export interface OpenDatabaseOptions {
  /** Connections at most (`defaultPoolSize`). */
  max?: number;
  /** How long a checkout waits for a connection before it fails; unset: as long as it takes. */
  connectionTimeoutMillis?: number;
  /** How long an idle connection is kept (`defaultIdleMs`). */
  idleMs?: number;
}

/**
 * An idle connection is kept this long, not pg's 10 s: a new one costs Postgres a backend and
 * plans each named statement again for its first five runs (a batch claim's plan takes about
 * 3 ms), so a burst after a user's pause would pay that on every connection.
 */
const defaultIdleMs = 5 * 60_000;

export function openDatabase(databaseUrl: string, options: OpenDatabaseOptions = {}): DbHandle {
  const { max = defaultPoolSize, connectionTimeoutMillis, idleMs = defaultIdleMs } = options;
  const pool = survivingConnectionLoss(
    new pg.Pool({
      connectionString: databaseUrl,
      max,
      idleTimeoutMillis: idleMs,
      ...(connectionTimeoutMillis !== undefined ? { connectionTimeoutMillis } : {}),
    }),
  );
  const db = drizzle(pool, { schema });
  return { db, pool, close: () => pool.end() };
}

/**
 * A connection lost (server restart, network cut) must fail only the work on it, never the
 * process (SPEC D9). pg emits `error` on a client whose connection ends; the pool listens
 * while the client is idle, but a checked-out client (a transaction, `pool.connect()`) has no
 * listener, and an unheard `error` event throws out of the socket's handler and kills the
 * process. Each client therefore gets a listener of its own: its pending and later queries
 * still reject, and the pool drops it on release because it is no longer queryable.
 */
function survivingConnectionLoss(pool: pg.Pool): pg.Pool {
  pool.on("error", () => {});
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  return pool;
}
